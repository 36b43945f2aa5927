//! What runs leave for people to read: `roce demo`'s summary, tables and sparklines ([`demo`]),
//! the fabric's `--out DIR` files and plots ([`sim`], the FCT slowdown plot in [`fct`]),
//! `roce sim compare`'s ([`compare`], its overlays' figures in [`overlay`]), a run's speed and memory ([`speed`]), and shared text
//! and plot helpers ([`text`], `plot`).

pub mod compare;
pub mod demo;
pub mod fct;
pub mod overlay;
mod plot;
pub mod sim;
pub mod speed;
pub mod telemetry;
pub mod text;
