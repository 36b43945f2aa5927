//! Memory a test lends to a region (`Endpoint::reg_mr_lent`), as the verbs library lends an
//! application's buffer, counting the writes the endpoint asks of it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use roce_proto::mr::RegionMemory;

/// Bytes the harness lends a region, and how often the endpoint asked to write them.
#[derive(Clone, Debug)]
pub struct Lent {
    /// The bytes.
    pub bytes: Arc<Mutex<Vec<u8>>>,
    /// Writes asked of it.
    pub writes: Arc<AtomicU64>,
}

impl Lent {
    /// `len` bytes of `fill`.
    pub fn filled(len: usize, fill: u8) -> Lent {
        Lent {
            bytes: Arc::new(Mutex::new(vec![fill; len])),
            writes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// For memory that must never be written: an error if a write was asked, else the first
    /// byte that is not `fill` (`None`: all are).
    pub fn unwritten_change(&self, fill: u8) -> Result<Option<usize>, String> {
        let writes = self.writes.load(Ordering::Relaxed);
        if writes > 0 {
            return Err(format!("lent memory was asked to write {writes} times"));
        }
        let bytes = self.bytes.lock().map_err(|_| "a poisoned lock")?;
        Ok(bytes.iter().position(|&b| b != fill))
    }
}

impl RegionMemory for Lent {
    fn len(&self) -> usize {
        self.bytes.lock().map_or(0, |b| b.len())
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> bool {
        let Ok(bytes) = self.bytes.lock() else {
            return false;
        };
        match offset
            .checked_add(dst.len())
            .and_then(|end| bytes.get(offset..end))
        {
            Some(src) => {
                dst.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, offset: usize, src: &[u8]) -> bool {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let Ok(mut bytes) = self.bytes.lock() else {
            return false;
        };
        match offset
            .checked_add(src.len())
            .and_then(|end| bytes.get_mut(offset..end))
        {
            Some(dst) => {
                dst.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
}
