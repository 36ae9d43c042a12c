//! toolwright-http: Streamable HTTP (being written).
