//! The message store: CommitLog, put lock, flush and commit services.
