//! The global allocator, chosen at build time: jemalloc by default (see
//! docs/benchmarks.md, "Memory under attack", for the figures behind the
//! choice); `--no-default-features` keeps the system allocator.

#[cfg(all(feature = "jemalloc", feature = "mimalloc"))]
compile_error!("choose one global allocator: feature `jemalloc` or `mimalloc`");

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sets the allocator up for the daemon, before it allocates much.
/// jemalloc purges freed pages only when a thread allocates again unless
/// its background thread runs: without it, an idle daemon keeps what a
/// burst freed. Short-lived commands skip the thread's start-up cost.
pub fn tune_for_daemon() {
    #[cfg(feature = "jemalloc")]
    if let Err(err) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::debug!(error = %err, "jemalloc's background purging is unavailable");
    }
}
