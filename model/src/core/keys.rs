//! Keys and ids every service shares: [`ItemKey`], the address of an item, and
//! [`splitmix`], which spreads counters into ids and hashes.

use serde::{Deserialize, Serialize};

/// The address of an item: container, partition key, id. Ordered field by field.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ItemKey {
    /// The container (a Blob container / Cosmos container).
    pub container: String,
    /// The partition key (Cosmos); blobs can use one fixed value.
    pub partition_key: String,
    /// The item id (the blob name).
    pub id: String,
}

impl ItemKey {
    /// Builds a key from its three parts.
    pub fn new(
        container: impl Into<String>,
        partition_key: impl Into<String>,
        id: impl Into<String>,
    ) -> ItemKey {
        ItemKey {
            container: container.into(),
            partition_key: partition_key.into(),
            id: id.into(),
        }
    }
}

/// A 64-bit mixing function (splitmix64's finaliser): deterministic spreads of counters.
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
