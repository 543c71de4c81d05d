//! One caller of the soak: its connection (renewed every 50 calls) and one call of each
//! kind, made and checked against the oracle.
//!
//! Not here: the misbehaving calls' bodies (`hostile.rs`), the oracle (`oracle.rs`), the run
//! that spawns the callers and tallies their outcomes (`soak.rs`).

use super::choices::{Rng, random_squares};
use super::hostile::{half_preface, invalid, read_and_leave};
use super::oracle::{CLASSES, ORACLE_N, SOLUTIONS, answer, oracle};
use super::outcome::{Kind, Outcome, compare, failed};
use queens::client::{Access, Client, connect_with};
use queens::pb::{CountRequest, EnumerateRequest, Shard};
use std::time::Duration;
use tonic::Code;

/// Reads a whole Enumerate stream of size `n` as records, or the status that ended it.
async fn drain(client: &mut Client, request: EnumerateRequest) -> Result<Vec<Vec<u8>>, Outcome> {
    let n = request.n as usize;
    let mut stream = client
        .enumerate(request)
        .await
        .map_err(|s| failed(&s))?
        .into_inner();
    let mut boards = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(m)) => {
                let records = queens::client::records(n, &m).map_err(|s| failed(&s))?;
                boards.extend(records.chunks_exact(n).map(<[u8]>::to_vec));
            }
            Ok(None) => return Ok(boards),
            Err(s) => return Err(failed(&s)),
        }
    }
}

/// One caller's state: its connection (renewed now and then) and its choices.
pub(super) struct Caller {
    addr: String,
    access: Access,
    client: Option<Client>,
    calls: u64,
    /// The caller's choices (the run's too: which kind next, how long to back off).
    pub(super) rng: Rng,
}

impl Caller {
    /// A caller of the server at `addr`, not yet connected, its choices seeded with `seed`.
    pub(super) fn new(addr: String, access: Access, seed: u64) -> Caller {
        let (client, calls, rng) = (None, 0, Rng(queens::batch::SplitMix64(seed)));
        Caller {
            addr,
            access,
            client,
            calls,
            rng,
        }
    }

    /// The caller's connection, made anew every 50 calls.
    async fn client(&mut self) -> Result<Client, Outcome> {
        if self.calls.is_multiple_of(50) {
            self.client = None;
        }
        self.calls += 1;
        if self.client.is_none() {
            let client = connect_with(&self.addr, &self.access)
                .await
                .map_err(|e| Outcome::Unexpected(format!("connect: {e}")))?;
            self.client = Some(client);
        }
        Ok(self.client.clone().expect("connected"))
    }

    /// Makes one call of `kind` and checks it.
    pub(super) async fn call(&mut self, kind: Kind) -> Outcome {
        match self.checked(kind).await {
            Ok(outcome) | Err(outcome) => outcome,
        }
    }

    /// The call's outcome: `Err` when it ended early (the outcome says how).
    async fn checked(&mut self, kind: Kind) -> Result<Outcome, Outcome> {
        let mut client = self.client().await?;
        let rng = &mut self.rng;
        Ok(match kind {
            Kind::Count => {
                let n = rng.range(1, 14) as u32;
                let r = client
                    .count(CountRequest {
                        n,
                        ..Default::default()
                    })
                    .await
                    .map_err(|s| failed(&s))?
                    .into_inner();
                let i = n as usize - 1;
                if r.solutions == SOLUTIONS[i] && r.fundamental == Some(CLASSES[i]) {
                    Outcome::Right
                } else {
                    Outcome::Wrong(format!("Count n = {n}: {r:?}"))
                }
            }
            Kind::CountFixed => {
                let n = rng.range(1, u64::from(ORACLE_N)) as u32;
                let fixed = random_squares(rng, n, 3);
                let r = client
                    .count(CountRequest {
                        n,
                        fixed: fixed.clone(),
                        ..Default::default()
                    })
                    .await
                    .map_err(|s| failed(&s))?
                    .into_inner();
                let want = answer(n, &fixed, false).len() as u64;
                if r.solutions == want {
                    Outcome::Right
                } else {
                    Outcome::Wrong(format!("Count n = {n} {fixed:?}: {r:?}, expected {want}"))
                }
            }
            Kind::CountParts => {
                let n = rng.range(4, 14) as u32;
                let count = rng.range(2, 9) as u32;
                let mut solutions = 0;
                for index in 0..count {
                    let r = client
                        .count(CountRequest {
                            n,
                            shard: Some(Shard { index, count }),
                            ..Default::default()
                        })
                        .await
                        .map_err(|s| failed(&s))?
                        .into_inner();
                    solutions += r.solutions;
                }
                if solutions == SOLUTIONS[n as usize - 1] {
                    Outcome::Right
                } else {
                    Outcome::Wrong(format!("Count n = {n} in {count} parts: {solutions}"))
                }
            }
            Kind::Enumerate => {
                let n = rng.range(1, u64::from(ORACLE_N)) as u32;
                let fundamental = rng.chance(3);
                let fixed = if fundamental {
                    Vec::new()
                } else {
                    random_squares(rng, n, 2)
                };
                let limit = if rng.chance(2) { 0 } else { rng.range(1, 3000) };
                let batch_size = [0, 1, 7, 64, 1000][rng.range(0, 4) as usize];
                let packed = rng.chance(2);
                let mut want = answer(n, &fixed, fundamental);
                if limit > 0 {
                    want.truncate(limit as usize);
                }
                let request = EnumerateRequest {
                    n,
                    fundamental,
                    fixed,
                    limit,
                    batch_size,
                    packed,
                    compact: !packed,
                    ..Default::default()
                };
                let what = format!("{request:?}");
                compare(&what, &drain(&mut client, request).await?, &want)
            }
            Kind::Shards => {
                let n = rng.range(4, u64::from(ORACLE_N)) as u32;
                let count = rng.range(2, 7) as u32;
                let mut all = Vec::new();
                for index in 0..count {
                    let request = EnumerateRequest {
                        n,
                        shard: Some(Shard { index, count }),
                        packed: true,
                        ..Default::default()
                    };
                    let part = drain(&mut client, request).await?;
                    if !part.windows(2).all(|w| w[0] < w[1]) {
                        return Ok(Outcome::Wrong(format!(
                            "n = {n} shard {index}/{count}: out of order"
                        )));
                    }
                    all.extend(part);
                }
                all.sort();
                compare(&format!("n = {n} in {count} shards"), &all, oracle(n))
            }
            Kind::Resume => {
                let n = rng.range(4, u64::from(ORACLE_N)) as u32;
                let all = oracle(n);
                let (after, want): (Vec<u32>, Vec<Vec<u8>>) = if rng.chance(4) || all.is_empty() {
                    // A vector that is no solution: the boards after it in order.
                    let v: Vec<u32> = (0..n)
                        .map(|_| rng.range(0, u64::from(n) - 1) as u32)
                        .collect();
                    let bytes: Vec<u8> = v.iter().map(|&c| c as u8).collect();
                    (v, all.iter().filter(|b| **b > bytes).cloned().collect())
                } else {
                    let i = rng.range(0, all.len() as u64 - 1) as usize;
                    (
                        all[i].iter().map(|&c| u32::from(c)).collect(),
                        all[i + 1..].to_vec(),
                    )
                };
                let request = EnumerateRequest {
                    n,
                    start_after: after.clone(),
                    packed: rng.chance(2),
                    ..Default::default()
                };
                compare(
                    &format!("n = {n} after {after:?}"),
                    &drain(&mut client, request).await?,
                    &want,
                )
            }
            Kind::Cancel => {
                if rng.chance(2) {
                    // A Count of n = 16..18 dropped before its answer.
                    let n = rng.range(16, 18) as u32;
                    let wait = Duration::from_millis(rng.range(10, 300));
                    let call = client.count(CountRequest {
                        n,
                        ..Default::default()
                    });
                    match tokio::time::timeout(wait, call).await {
                        Err(_) | Ok(Ok(_)) => Outcome::Right,
                        Ok(Err(s)) => failed(&s),
                    }
                } else {
                    let n = rng.range(13, 20) as u32;
                    let messages = rng.range(1, 5);
                    read_and_leave(&mut client, n, messages, Duration::ZERO, Duration::ZERO).await
                }
            }
            Kind::Deadline => {
                // n = 18 is 666 million boards, seconds of search on any machine.
                let n = rng.range(18, 20) as u32;
                let mut request = tonic::Request::new(CountRequest {
                    n,
                    ..Default::default()
                });
                request.set_timeout(Duration::from_millis(rng.range(20, 100)));
                match client.count(request).await {
                    // The server's answer, or tonic's own timer firing first (it reports
                    // the deadline as CANCELLED "Timeout expired").
                    Err(s) if s.code() == Code::DeadlineExceeded => Outcome::Right,
                    Err(s) if s.code() == Code::Cancelled && s.message() == "Timeout expired" => {
                        Outcome::Right
                    }
                    Err(s) => failed(&s),
                    Ok(r) => Outcome::Unexpected(format!(
                        "Count n = {n} beat its deadline: {:?}",
                        r.into_inner()
                    )),
                }
            }
            Kind::SlowReader => {
                let n = rng.range(13, 16) as u32;
                let pause = Duration::from_millis(rng.range(20, 200));
                read_and_leave(&mut client, n, 20, pause, Duration::ZERO).await
            }
            Kind::StalledReader => {
                let n = rng.range(14, 16) as u32;
                let stall = Duration::from_millis(rng.range(1000, 5000));
                read_and_leave(&mut client, n, 2, Duration::ZERO, stall).await
            }
            Kind::Disconnect => {
                self.client = None;
                if rng.chance(2) {
                    half_preface(&self.addr).await
                } else {
                    // Its own connection, dropped with the stream open.
                    let mut own = connect_with(&self.addr, &self.access)
                        .await
                        .map_err(|e| Outcome::Unexpected(format!("connect: {e}")))?;
                    let n = rng.range(14, 18) as u32;
                    read_and_leave(&mut own, n, 1, Duration::ZERO, Duration::ZERO).await
                }
            }
            Kind::Invalid => invalid(&mut client, rng).await,
            Kind::WrongToken => {
                let access = Access {
                    token: Some("not-a-token-of-this-server".into()),
                    ..self.access.clone()
                };
                let mut wrong = connect_with(&self.addr, &access)
                    .await
                    .map_err(|e| Outcome::Unexpected(format!("connect: {e}")))?;
                match wrong
                    .count(CountRequest {
                        n: 8,
                        ..Default::default()
                    })
                    .await
                {
                    Err(s) if s.code() == Code::Unauthenticated => Outcome::Right,
                    Err(s) => failed(&s),
                    Ok(_) => Outcome::Unexpected("a wrong token was accepted".into()),
                }
            }
        })
    }
}
