//! `roce pcap check` and `roce pcap explain`: validate and teach from packet captures.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde::Serialize;

use roce::pcap::facts::FrameFacts;
use roce::pcap::filter::{parse_qpn, EcnMatch, FrameFilter, OpcodeMatch, PsnRange};
use roce::pcap::links::{find_links, Links};
use roce::pcap::{CaptureError, CaptureReader, PcapRecord};
use roce_proto::wire::{parse_frame, parse_frame_unverified, pretty, RocePacket, WireError};

use crate::cli::output::{write_json, Json};

/// Subcommands of `roce pcap`.
#[derive(Subcommand, Debug)]
pub enum PcapCommand {
    /// One line per frame: opcode, PSN, QPN, payload length, ECN, FECN/BECN and ICRC verdict.
    /// Exits non-zero when any RoCE frame is malformed or fails its ICRC (every frame is
    /// checked; the filters only choose the lines shown).
    Check {
        /// A pcap or pcapng file with Ethernet frames.
        file: PathBuf,
        /// One JSON object per frame, then a summary object.
        #[arg(long)]
        json: bool,
        /// Frame filters (all must hold; a filter's comma-separated values are alternatives).
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Every RoCE frame as an annotated header dump: field, value and what it means, then how
    /// it links to other frames (the CNP a CE-marked frame caused, the frames a NAK made the
    /// sender resend) and the capture's comment (what a fault injector did to it).
    Explain {
        /// A pcap or pcapng file with Ethernet frames.
        file: PathBuf,
        /// Only the frame with this number (1-based, as Wireshark counts).
        #[arg(long)]
        frame: Option<usize>,
        /// Only the links, one line per frame that has one, then their counts.
        #[arg(long, conflicts_with = "frame")]
        links: bool,
    },
}

/// What `check` lists.
#[derive(Args, Debug, Default)]
pub struct FilterArgs {
    /// Only these opcodes: numbers (0x0a), names (rc-rdma-write-only) or classes (send, write,
    /// read, read-request, read-response, ack, nak, atomic, atomic-ack, cnp).
    #[arg(long, value_delimiter = ',')]
    opcode: Vec<OpcodeMatch>,
    /// Only these destination QPNs (decimal or 0x hex).
    #[arg(long, value_delimiter = ',', value_parser = parse_qpn)]
    qpn: Vec<u32>,
    /// Only PSNs in these inclusive ranges (100..200; 0xfffff0..0x10 wraps; a single PSN).
    #[arg(long, value_delimiter = ',')]
    psn: Vec<PsnRange>,
    /// Only these ECN codepoints: ce, ect0, ect1, not-ect, or ect (any capable).
    #[arg(long, value_delimiter = ',')]
    ecn: Vec<EcnMatch>,
}

impl FilterArgs {
    fn filter(self) -> FrameFilter {
        FrameFilter {
            opcodes: self.opcode,
            qpns: self.qpn,
            psns: self.psn,
            ecn: self.ecn,
        }
    }
}

/// Runs a `roce pcap` subcommand, writing to `out`.
pub fn run(cmd: PcapCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    match cmd {
        PcapCommand::Check { file, json, filter } => check(file, json, &filter.filter(), out),
        PcapCommand::Explain { file, frame, links } => explain(file, frame, links, out),
    }
}

/// What `check` found in one frame (short-lived on the stack, so its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Verdict<'a> {
    NotRoce,
    Roce {
        packet: RocePacket<'a>,
        icrc_ok: bool,
    },
    Malformed(WireError),
}

fn judge(data: &[u8]) -> Verdict<'_> {
    match parse_frame_unverified(data) {
        Err(WireError::NotRoce) => Verdict::NotRoce,
        Err(e) => Verdict::Malformed(e),
        Ok(packet) => match parse_frame(data) {
            Ok(_) => Verdict::Roce {
                packet,
                icrc_ok: true,
            },
            Err(WireError::BadIcrc { .. }) => Verdict::Roce {
                packet,
                icrc_ok: false,
            },
            Err(e) => Verdict::Malformed(e),
        },
    }
}

#[derive(Default, Serialize)]
struct Summary {
    summary: bool,
    frames: usize,
    roce: usize,
    icrc_ok: usize,
    icrc_bad: usize,
    malformed: usize,
    /// Frames that passed the filters (absent without filters).
    #[serde(skip_serializing_if = "Option::is_none")]
    matched: Option<usize>,
}

/// The listing's last line.
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} frames, {} RoCEv2: {} ICRC ok, {} ICRC bad, {} malformed",
            self.frames, self.roce, self.icrc_ok, self.icrc_bad, self.malformed
        )?;
        if let Some(m) = self.matched {
            write!(f, "; {m} shown by the filters")?;
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct FrameLine {
    frame: usize,
    time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    opcode: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    opcode_name: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    psn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dest_qpn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_len: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ecn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fecn: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    becn: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    icrc: Option<&'static str>,
    roce: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
}

fn check(
    file: PathBuf,
    json: bool,
    filter: &FrameFilter,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let reader = CaptureReader::open(&file)?;
    let mut summary = Summary {
        summary: true,
        matched: (!filter.is_empty()).then_some(0),
        ..Summary::default()
    };
    let mut damage: Option<CaptureError> = None;
    let mut start = None;
    for item in reader {
        let frame: PcapRecord = match item {
            Ok(frame) => frame,
            Err(e) => {
                damage = Some(e);
                break;
            }
        };
        summary.frames += 1;
        let n = summary.frames;
        let t0 = *start.get_or_insert(frame.timestamp);
        let time = frame.timestamp.saturating_sub(t0).as_secs_f64();
        let (line, text, shown) = examine(n, time, &frame, filter, &mut summary);
        if !shown {
            continue;
        }
        if json {
            write_json(out, &line, Json::Line)?;
        } else if let Some(c) = &frame.comment {
            writeln!(out, "{n:>6} {time:>12.6}  {text}  [{c}]")?;
        } else {
            writeln!(out, "{n:>6} {time:>12.6}  {text}")?;
        }
    }
    if json {
        write_json(out, &summary, Json::Line)?;
    } else {
        writeln!(out, "{summary}")?;
    }
    if let Some(e) = damage {
        return Err(e).with_context(|| format!("{}", file.display()));
    }
    if summary.icrc_bad + summary.malformed > 0 {
        bail!(
            "{}: {} frame(s) failed the check ({} bad ICRC, {} malformed)",
            file.display(),
            summary.icrc_bad + summary.malformed,
            summary.icrc_bad,
            summary.malformed
        );
    }
    Ok(())
}

/// Frame `n`, `time` seconds into the capture: its JSON line and its text line, counted into
/// `summary`; and whether the filters show it.
fn examine(
    n: usize,
    time: f64,
    frame: &PcapRecord,
    filter: &FrameFilter,
    summary: &mut Summary,
) -> (FrameLine, String, bool) {
    let mut line = FrameLine {
        frame: n,
        time,
        opcode: None,
        opcode_name: None,
        psn: None,
        dest_qpn: None,
        payload_len: None,
        ecn: None,
        fecn: None,
        becn: None,
        icrc: None,
        roce: false,
        error: None,
        comment: frame.comment.clone(),
    };
    let verdict = judge(&frame.data);
    let shown = filter.is_empty()
        || matches!(&verdict, Verdict::Roce { packet, .. } if filter.matches(packet));
    if shown {
        if let Some(m) = summary.matched.as_mut() {
            *m += 1;
        }
    }
    let text = match verdict {
        Verdict::NotRoce => format!("not RoCEv2: {}", describe_other(&frame.data)),
        Verdict::Malformed(e) => {
            summary.roce += 1;
            summary.malformed += 1;
            line.roce = true;
            line.error = Some(e.to_string());
            format!("MALFORMED: {e}")
        }
        Verdict::Roce { packet, icrc_ok } => {
            summary.roce += 1;
            if icrc_ok {
                summary.icrc_ok += 1;
            } else {
                summary.icrc_bad += 1;
            }
            let bth = &packet.repr.bth;
            line.roce = true;
            line.opcode = Some(bth.opcode.0);
            line.opcode_name = Some(bth.opcode.name());
            line.psn = Some(bth.psn.value());
            line.dest_qpn = Some(bth.dest_qpn);
            line.payload_len = Some(packet.repr.payload_len);
            line.ecn = Some(packet.repr.ip.ecn().to_string());
            line.fecn = Some(bth.fecn);
            line.becn = Some(bth.becn);
            line.icrc = Some(if icrc_ok { "ok" } else { "bad" });
            format!(
                "{} icrc {}",
                pretty::summary(&packet),
                if icrc_ok { "ok" } else { "BAD" }
            )
        }
    };
    (line, text, shown)
}

/// Names a frame that is not RoCEv2 (ARP, the TCP exchange of QP numbers, ...) for the listing.
fn describe_other(data: &[u8]) -> String {
    use roce_proto::wire::{ethernet, ipv4, ipv6, EtherType};
    let Ok(eth) = ethernet::Frame::new_checked(data) else {
        return format!("{} bytes, too short for Ethernet", data.len());
    };
    let Ok(eth) = ethernet::Repr::parse(&eth) else {
        return "unparseable Ethernet header".to_string();
    };
    let l3 = data.get(eth.buffer_len()..).unwrap_or_default();
    let ip = match eth.ethertype {
        EtherType::Arp => return "ARP".to_string(),
        EtherType::Ipv4 => ipv4::Packet::new_checked(l3)
            .map(|ip| (ip.src_addr().into(), ip.dst_addr().into(), ip.protocol())),
        EtherType::Ipv6 => ipv6::Packet::new_checked(l3)
            .map(|ip| (ip.src_addr().into(), ip.dst_addr().into(), ip.next_header())),
        other => return format!("EtherType {:#06x}", u16::from(other)),
    };
    let Ok((src, dst, proto)): Result<(IpAddr, IpAddr, u8), _> = ip else {
        return format!("truncated {}", eth.ethertype);
    };
    let proto = match proto {
        1 => "ICMP".to_string(),
        6 => "TCP".to_string(),
        17 => "UDP".to_string(),
        58 => "ICMPv6".to_string(),
        n => format!("protocol {n}"),
    };
    format!("{src} > {dst} {proto}")
}

/// The links among a capture's RoCE frames (a first pass over the file).
fn capture_links(file: &PathBuf) -> anyhow::Result<Links> {
    let mut facts = Vec::new();
    for (i, item) in CaptureReader::open(file)?.enumerate() {
        let frame = item.with_context(|| format!("{}", file.display()))?;
        if let Ok(packet) = parse_frame_unverified(&frame.data) {
            facts.push(FrameFacts::of(i + 1, frame.timestamp, &packet));
        }
    }
    Ok(find_links(facts))
}

fn explain(
    file: PathBuf,
    only: Option<usize>,
    links_only: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let links = capture_links(&file)?;
    if links_only {
        for (n, link) in links.all() {
            writeln!(out, "frame {n}: {link}")?;
        }
        let c = links.counts();
        writeln!(
            out,
            "{} CE-marked frame(s), {} with a CNP of their own; {} CNP(s); {} NAK(s); {} frame(s) \
             resent for a NAK, {} without one",
            c.ce_marked, c.ce_with_cnp, c.cnps, c.naks, c.resent_for_nak, c.resent_without_nak
        )?;
        return Ok(());
    }
    let reader = CaptureReader::open(&file)?;
    let mut shown = 0;
    for (i, item) in reader.enumerate() {
        let n = i + 1;
        let frame = item.with_context(|| format!("{}", file.display()))?;
        if only.is_some_and(|want| want != n) {
            continue;
        }
        match pretty::explain_frame(&frame.data) {
            Ok(dump) => {
                writeln!(out, "── frame {n} ({} bytes) ──", frame.data.len())?;
                write!(out, "{dump}")?;
                shown += 1;
            }
            Err(WireError::NotRoce) if only.is_none() => continue,
            Err(e) => {
                writeln!(out, "── frame {n} ({} bytes) ──", frame.data.len())?;
                writeln!(out, "not a valid RoCEv2 frame: {e}")?;
                shown += 1;
            }
        }
        if let Some(c) = &frame.comment {
            writeln!(out, "  capture comment: {c}")?;
        }
        for link in links.of(n) {
            writeln!(out, "  link: {link}")?;
        }
        writeln!(out)?;
    }
    if let Some(want) = only {
        if shown == 0 {
            bail!("{}: there is no frame {want}", file.display());
        }
    }
    Ok(())
}
