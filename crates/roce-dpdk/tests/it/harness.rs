//! The runner and helpers of the port and runtime tests. One process holds one EAL (it cannot be
//! re-initialised), so this binary has its own runner (`harness = false`) that runs its tests in
//! sequence and prints "N passed, N failed"; the lcores binary has a runner of its own but takes
//! the same filter (`roce_testkit::filter`). Runs as root without hugepages (`--no-huge` is added
//! automatically).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use roce_dpdk::{ring_pair, DpdkPort, Eal, EalConfig, Mbuf, Mempool, MempoolConfig, PortConfig};
use roce_proto::port::Port;

pub const EAL_ARGS: &str = "--log-level=lib.eal:4 --vdev=net_null0 --vdev=net_ring0";

/// A test that runs once the EAL is up.
pub type Test = fn(&Eal) -> anyhow::Result<()>;

/// A test that runs before the EAL exists.
pub type BeforeEal = fn() -> anyhow::Result<()>;

/// `(name, test)` pairs from test function names.
macro_rules! dpdk_tests {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), $name as $crate::harness::Test)),*]
    };
}

/// Runs `before` (tests that need no EAL) and then, with the EAL started from [`EAL_ARGS`],
/// `tests`; only the names containing a command-line word when any is given. Exits non-zero
/// when a test failed.
pub fn run(before: &[(&str, BeforeEal)], tests: &[(&str, Test)]) {
    let selected = roce_testkit::filter::name_filter();
    let (mut passed, mut failed) = (0, 0);
    let mut report = |name: &str, result: anyhow::Result<()>| match result {
        Ok(()) => {
            passed += 1;
            println!("test {name} ... ok");
        }
        Err(e) => {
            failed += 1;
            println!("test {name} ... FAILED: {e:#}");
        }
    };
    let catch = |test: &dyn Fn() -> anyhow::Result<()>| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(test))
            .unwrap_or_else(|_| Err(anyhow::anyhow!("panicked")))
    };

    // Before the EAL exists: a refused start must leave the process able to start it properly.
    for (name, test) in before {
        if selected(name) {
            report(name, catch(test));
        }
    }
    let eal = match Eal::init(&EalConfig::new(EAL_ARGS)) {
        Ok(eal) => eal,
        Err(e) => {
            println!("EAL did not start: {e}\n0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    for (name, test) in tests {
        if selected(name) {
            report(name, catch(&|| test(&eal)));
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}

pub fn pool(eal: &Eal, size: u32) -> anyhow::Result<Arc<Mempool>> {
    let config = MempoolConfig {
        size,
        cache: 0,
        ..MempoolConfig::default()
    };
    Ok(Arc::new(Mempool::new(eal, &config)?))
}

pub fn no_leak(pool: &Mempool) -> anyhow::Result<()> {
    ensure!(
        pool.in_use() == 0,
        "{} mbufs leaked from {}",
        pool.in_use(),
        pool.name()
    );
    Ok(())
}

pub fn port_config() -> PortConfig {
    PortConfig {
        rx_desc: 128,
        tx_desc: 128,
        link_timeout: Duration::from_secs(5),
        ..PortConfig::default()
    }
}

/// The port of the vdev called `name`, started with [`port_config`].
pub fn named_port(eal: &Eal, name: &str, pool: &Arc<Mempool>) -> anyhow::Result<DpdkPort> {
    Ok(DpdkPort::new(
        eal,
        eal.port_by_name(name)?,
        pool.clone(),
        &port_config(),
    )?)
}

/// Both ends of a new ring pair of `size` slots, started with `config`.
pub fn ring_ports(
    eal: &Eal,
    name: &str,
    size: u32,
    pool: &Arc<Mempool>,
    config: &PortConfig,
) -> anyhow::Result<(DpdkPort, DpdkPort)> {
    let (a, b) = ring_pair(eal, name, size)?;
    Ok((
        DpdkPort::new(eal, a, pool.clone(), config)?,
        DpdkPort::new(eal, b, pool.clone(), config)?,
    ))
}

/// Copies `frame` into a fresh mbuf.
pub fn mbuf_with(pool: &Mempool, frame: &[u8]) -> anyhow::Result<Mbuf> {
    let mut m = pool.alloc().context("pool exhausted")?;
    m.append(frame.len())
        .context("frame larger than an mbuf")?
        .copy_from_slice(frame);
    Ok(m)
}

/// One mbuf per frame.
pub fn burst_of(pool: &Mempool, frames: &[Vec<u8>]) -> anyhow::Result<Vec<Mbuf>> {
    frames.iter().map(|f| mbuf_with(pool, f)).collect()
}

/// Receives until `n` frames arrived or 2 s passed.
pub fn rx_until(port: &mut DpdkPort, out: &mut Vec<Mbuf>, n: usize) {
    let start = Instant::now();
    while out.len() < n && start.elapsed() < Duration::from_secs(2) {
        if port.rx_burst(out, n - out.len()) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
