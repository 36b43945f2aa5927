//! The loss-recovery flags of a command that connects both ends of its QPs itself (`roce
//! loopback`): `--recovery` and `--reorder-window`. Selective repeat is roce's own extension
//! (docs/selective-repeat.md): both ends must speak it, so a command whose peer may be another
//! implementation (rxe, perftest) does not offer it.

use clap::{Args, ValueEnum};

use roce_proto::qp::RequesterConfig;
use roce_proto::time::Duration;
use roce_proto::verbs::Recovery;

/// How lost packets are recovered, as the command line names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum RecoveryMode {
    /// IBA's go-back-N: resend everything from the first packet lost.
    #[default]
    GoBackN,
    /// IRN's selective repeat: place packets that arrive out of order, resend only those lost.
    Selective,
}

/// `--recovery`, `--reorder-window`.
#[derive(Args, Debug, Clone, Default)]
pub struct RecoveryArgs {
    /// Loss recovery of every QP (both ends).
    #[arg(long, value_enum, default_value = "go-back-n")]
    pub recovery: RecoveryMode,
    /// Selective repeat: µs a packet shown missing may still arrive (reordered) before it is
    /// resent (0: at once, as IRN).
    #[arg(long, default_value_t = 0.0, value_name = "US")]
    pub reorder_window: f64,
}

impl RecoveryArgs {
    /// The QP attribute.
    pub fn recovery(&self) -> Recovery {
        match self.recovery {
            RecoveryMode::GoBackN => Recovery::GoBackN,
            RecoveryMode::Selective => Recovery::SelectiveRepeat,
        }
    }

    /// The requester's tunables with the reordering window; refuses a window that is negative,
    /// not a number, over a second, or given without selective repeat (it would change nothing).
    pub fn requester(&self) -> anyhow::Result<RequesterConfig> {
        let us = self.reorder_window;
        if !(0.0..=1e6).contains(&us) {
            anyhow::bail!("--reorder-window {us} must be in 0..=1000000 µs");
        }
        if us > 0.0 && self.recovery == RecoveryMode::GoBackN {
            anyhow::bail!("--reorder-window applies to --recovery selective only");
        }
        Ok(RequesterConfig {
            reorder_window: Duration::from_micros_f64(us),
            ..RequesterConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_needs_selective_repeat_and_a_sane_value() {
        let mut a = RecoveryArgs::default();
        assert_eq!(a.recovery(), Recovery::GoBackN);
        assert_eq!(a.requester().unwrap(), RequesterConfig::default());
        a.reorder_window = 5.0;
        assert!(a.requester().is_err(), "a window without selective repeat");
        a.recovery = RecoveryMode::Selective;
        assert_eq!(a.recovery(), Recovery::SelectiveRepeat);
        assert_eq!(
            a.requester().unwrap().reorder_window,
            Duration::from_micros(5)
        );
        for bad in [-1.0, f64::NAN, 2e6] {
            a.reorder_window = bad;
            assert!(a.requester().is_err(), "{bad}");
        }
    }
}
