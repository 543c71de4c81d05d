//! The 2-minute soak: `queens-load soak` against a server with TLS and a bearer token, with
//! the same checks as the everyday suite's 15-second run (`load::soak`).

#[test]
fn a_two_minute_soak_checks_every_answer_and_stays_flat() {
    crate::load::soak(120);
}
