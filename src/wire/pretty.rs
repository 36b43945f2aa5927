//! Human-readable renderings of parsed frames (filled in below).
