//! Scenario files that several simulator tests run, by path (one declaration each).

/// The incast of `scenarios/incast.toml`.
pub const INCAST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/incast.toml");

/// The FB_Hadoop fat tree of `scenarios/fat-tree-fb-hadoop.toml` (finite flows).
pub const FAT_TREE_FB_HADOOP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scenarios/fat-tree-fb-hadoop.toml"
);

/// A scenario whose flows run out of retries (`tests/scenarios/retries-exhausted.toml`).
pub const RETRIES_EXHAUSTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scenarios/retries-exhausted.toml"
);

/// Web-search flows among 8 hosts on one switch (`scenarios/websearch.toml`, finite flows).
pub const WEBSEARCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/websearch.toml");

/// A ring AllReduce beside an incast (`scenarios/allreduce-incast.toml`).
pub const ALLREDUCE_INCAST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scenarios/allreduce-incast.toml"
);

/// The WebSearch half of the transport grid (`scenarios/transport-grid-websearch.toml`: a k = 4
/// fat tree, finite flows).
pub const TRANSPORT_GRID_WEBSEARCH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scenarios/transport-grid-websearch.toml"
);
