//! SPDY
