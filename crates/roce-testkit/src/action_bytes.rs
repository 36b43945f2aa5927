//! The hostile harnesses' input format: a byte string cut into fixed-width actions (shared by
//! `hostile_peer.rs` and `hostile_host.rs`, and so by the proptests and the fuzz targets), and
//! the loop that runs them.

/// Decodes `data` as `N`-byte actions; a short tail is dropped.
pub fn decode_chunks<const N: usize, A>(data: &[u8], decode: fn(&[u8; N]) -> A) -> Vec<A> {
    data.chunks_exact(N)
        .filter_map(|c| <&[u8; N]>::try_from(c).ok())
        .map(decode)
        .collect()
}

/// Runs `step` on each action in turn; an error names the step and its action.
pub fn run_steps<A: std::fmt::Debug>(
    actions: &[A],
    mut step: impl FnMut(&A) -> Result<(), String>,
) -> Result<(), String> {
    for (i, a) in actions.iter().enumerate() {
        step(a).map_err(|e| format!("step {i} ({a:?}): {e}"))?;
    }
    Ok(())
}
