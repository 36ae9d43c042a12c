//! search_files tests (being written).
