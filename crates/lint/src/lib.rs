//! toolwright-lint (placeholder)
