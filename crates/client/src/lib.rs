//! toolwright-client (placeholder)
