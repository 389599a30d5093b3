//! Instructions printed exactly as the kernel verifier prints them (`(bf) r6 = r1`).
