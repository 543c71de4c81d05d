//! The 2-minute soak: `queens-load soak` against a server with TLS and a bearer token, with
//! the everyday suite's checks (`load::soak`, 5 s there) and every kind of call answered.

#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn a_two_minute_soak_checks_every_answer_and_stays_flat() {
    crate::load::soak(120, true);
}
