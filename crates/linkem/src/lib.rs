//! Link emulator (see issue 4).
