//! The child processes of a test: a [`Reap`] kills one the test did not wait for (a failed
//! assertion must not leave a busy-polling `roce` behind), and [`free_port`] finds a TCP port
//! for an exchange.

use std::net::{Ipv4Addr, TcpListener};
use std::process::{Child, Output};

/// A child process, killed on drop unless waited for.
pub struct Reap(Option<Child>);

impl Reap {
    /// Takes care of `child`.
    pub fn new(child: Child) -> Reap {
        Reap(Some(child))
    }

    /// Waits for the child and returns what it printed.
    pub fn wait(mut self) -> Output {
        let child = self.0.take().expect("a child");
        child.wait_with_output().expect("wait for the child")
    }
}

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A TCP port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
