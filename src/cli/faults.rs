//! The fault-injection flags of a command with a link of its own (`roce loopback`'s in-memory or
//! ring link, the DPDK port of `roce perf` and `roce pingpong`): `--loss`, `--dup`, `--reorder`,
//! `--corrupt` and the seed the injector draws from. One group, flattened into each command;
//! a command may reword a flag's help (`mut_arg`), not its meaning.
//!
//! Not here: the injector ([`roce_proto::fault`]) and how a command wraps its ports in it.

use clap::Args;

use roce_proto::fault::FaultConfig;

/// The injector's seed when `--seed` is not given.
const DEFAULT_SEED: u64 = 1;

/// `--loss`, `--dup`, `--reorder`, `--corrupt`, `--seed`.
#[derive(Args, Debug, Clone, Default)]
pub struct FaultArgs {
    /// Fraction of frames dropped, each direction (0..1): fault injection on our port.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Fraction of frames duplicated, each direction.
    #[arg(long, default_value_t = 0.0)]
    pub dup: f64,
    /// Fraction of frames held back behind later ones, each direction.
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Fraction of frames with a flipped bit, each direction.
    #[arg(long, default_value_t = 0.0)]
    pub corrupt: f64,
    /// Seed of the starting PSNs and of the fault injector, for a run that repeats (default:
    /// PSNs from the OS-seeded random generator, faults from seed 1).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl FaultArgs {
    /// The four fractions, checked (each in [0, 1)).
    pub fn config(&self) -> anyhow::Result<FaultConfig> {
        let faults = FaultConfig {
            loss: self.loss,
            duplicate: self.dup,
            reorder: self.reorder,
            corrupt: self.corrupt,
        };
        faults.check()?;
        Ok(faults)
    }

    /// The seed of the injector: `--seed`, else 1.
    pub fn injector_seed(&self) -> u64 {
        self.seed.unwrap_or(DEFAULT_SEED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_out_of_range_are_refused_and_the_seed_defaults_to_one() {
        let args = FaultArgs {
            loss: 0.25,
            ..FaultArgs::default()
        };
        assert_eq!(args.config().map(|c| c.loss).ok(), Some(0.25));
        assert_eq!(args.injector_seed(), 1);
        let bad = FaultArgs {
            dup: 1.5,
            seed: Some(9),
            ..FaultArgs::default()
        };
        assert_eq!(
            bad.config().map_err(|e| e.to_string()).err().as_deref(),
            Some("--dup 1.5 must be in [0, 1)")
        );
        assert_eq!(bad.injector_seed(), 9);
    }
}
