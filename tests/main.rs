//! End-to-end and command-line tests (filled in as the stages land).
