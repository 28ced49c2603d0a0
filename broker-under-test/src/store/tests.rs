//! Unit tests of the store internals; end-to-end store tests live in `tests/store_*.rs`.
