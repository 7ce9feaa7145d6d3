//! The store as the tests open and age it.

use std::path::Path;

use acp_proxy::store::{Store, StoreConfig, StoreLocation};

/// The store file at `path`, without background pruning (a test decides what is pruned).
pub fn open_store(path: &Path) -> Store {
    Store::open(&StoreConfig {
        location: Some(StoreLocation::Path(path.to_owned())),
        background_prune: false,
        ..StoreConfig::default()
    })
    .unwrap_or_else(|e| panic!("the store does not open: {e}"))
}

/// Make `child` look `secs` seconds older to retention, straight in the file.
pub fn backdate(path: &Path, child: &str, secs: i64) {
    let conn = rusqlite::Connection::open(path).expect("open");
    let n = conn
        .execute(
            "UPDATE children SET updated_at = updated_at - ?2 WHERE child_id = ?1",
            rusqlite::params![child, secs],
        )
        .expect("backdate");
    assert_eq!(n, 1);
}
