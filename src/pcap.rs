//! Packet captures: read pcap and pcapng files, write pcap files that Wireshark decodes as RoCE.
//!
//! This is driver-side I/O (files), kept out of the sans-IO core. Reading is streaming, so a huge
//! capture costs one frame of memory at a time; a damaged file yields the frames before the damage
//! and then one [`CaptureError`].

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::{Block, PcapNgReader, PcapNgWriter};
use pcap_file::{DataLink, PcapError};

pub mod facts;
pub mod filter;
pub mod links;
pub mod pairs;

/// One record (a frame) read from a pcap or pcapng file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcapRecord {
    /// Capture timestamp since the Unix epoch (or since the start of a simulated run).
    pub timestamp: std::time::Duration,
    /// The captured bytes (possibly cut to the snap length).
    pub data: Vec<u8>,
    /// The frame's length on the wire.
    pub orig_len: u32,
    /// The frame's pcapng comment, if any (our loopback captures say what the fault injector
    /// did to the frame).
    pub comment: Option<String>,
}

/// Why a capture could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file could not be opened or created.
    #[error("cannot open {path}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file starts with neither a pcap nor a pcapng magic number.
    #[error("{path} is not a pcap or pcapng file")]
    NotACapture {
        /// The file.
        path: PathBuf,
    },
    /// The capture's link layer is not Ethernet.
    #[error("unsupported link type {0:?} (only Ethernet captures carry RoCEv2)")]
    LinkType(DataLink),
    /// The file ends in the middle of a record.
    #[error("capture truncated after frame {frames}")]
    Truncated {
        /// Frames read before the damage.
        frames: usize,
    },
    /// A record is malformed.
    #[error("malformed capture record after frame {frames}")]
    Malformed {
        /// Frames read before the damage.
        frames: usize,
        /// What the pcap parser said.
        source: PcapError,
    },
    /// Writing failed.
    #[error("cannot write capture")]
    Write(#[source] PcapError),
}

enum Format<R: Read> {
    Pcap(PcapReader<R>),
    PcapNg(PcapNgReader<R>),
}

/// Streams frames from a pcap or pcapng file (format detected from the magic number).
pub struct CaptureReader<R: Read = BufReader<File>> {
    format: Format<R>,
    frames: usize,
    done: bool,
}

const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
];
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

impl CaptureReader {
    /// Opens `path`, detecting pcap or pcapng.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        let open_err = |source| CaptureError::Open {
            path: path.to_owned(),
            source,
        };
        let mut file = File::open(path).map_err(open_err)?;
        let mut magic = [0u8; 4];
        let got = read_up_to(&mut file, &mut magic).map_err(open_err)?;
        let file = File::open(path).map_err(open_err)?;
        let not_capture = || CaptureError::NotACapture {
            path: path.to_owned(),
        };
        if got < 4 {
            return Err(not_capture());
        }
        Self::from_reader_with_magic(BufReader::new(file), magic).ok_or_else(not_capture)?
    }
}

impl<R: Read> CaptureReader<R> {
    /// Wraps a reader positioned at the start of a capture whose first four bytes are `magic`.
    fn from_reader_with_magic(reader: R, magic: [u8; 4]) -> Option<Result<Self, CaptureError>> {
        let format = if PCAP_MAGICS.contains(&magic) {
            PcapReader::new(reader).map(Format::Pcap)
        } else if magic == PCAPNG_MAGIC {
            PcapNgReader::new(reader).map(Format::PcapNg)
        } else {
            return None;
        };
        Some(
            format
                .map_err(|source| classify(source, 0))
                .and_then(|format| {
                    if let Format::Pcap(r) = &format {
                        let link = r.header().datalink;
                        if link != DataLink::ETHERNET {
                            return Err(CaptureError::LinkType(link));
                        }
                    }
                    Ok(CaptureReader {
                        format,
                        frames: 0,
                        done: false,
                    })
                }),
        )
    }

    /// Frames read so far.
    pub fn frames_read(&self) -> usize {
        self.frames
    }

    fn next_frame(&mut self) -> Option<Result<PcapRecord, CaptureError>> {
        match &mut self.format {
            Format::Pcap(r) => {
                let packet = r.next_packet()?;
                Some(packet.map(|p| PcapRecord {
                    timestamp: p.timestamp,
                    orig_len: p.orig_len,
                    data: p.data.into_owned(),
                    comment: None,
                }))
                .map(|r| r.map_err(|e| classify(e, self.frames)))
            }
            Format::PcapNg(r) => loop {
                let block = match r.next_block()? {
                    Ok(block) => block,
                    Err(e) => return Some(Err(classify(e, self.frames))),
                };
                match block {
                    Block::EnhancedPacket(p) => {
                        let comment = p.options.iter().find_map(|o| match o {
                            EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                            _ => None,
                        });
                        let (id, raw_time) = (p.interface_id as usize, p.timestamp);
                        let mut frame = PcapRecord {
                            timestamp: raw_time,
                            orig_len: p.original_len,
                            data: p.data.into_owned(),
                            comment,
                        };
                        let interface = r.interfaces().get(id);
                        let link = interface.map_or(DataLink::ETHERNET, |i| i.linktype);
                        if link != DataLink::ETHERNET {
                            return Some(Err(CaptureError::LinkType(link)));
                        }
                        frame.timestamp = scale_timestamp(raw_time, interface);
                        return Some(Ok(frame));
                    }
                    Block::SimplePacket(p) => {
                        let len = p.data.len() as u32;
                        return Some(Ok(PcapRecord {
                            timestamp: std::time::Duration::ZERO,
                            orig_len: p.original_len.max(len),
                            data: p.data.into_owned(),
                            comment: None,
                        }));
                    }
                    // Section headers, interface descriptions, statistics, name resolution...
                    _ => continue,
                }
            },
        }
    }
}

/// An enhanced packet block's timestamp in its interface's units (`if_tsresol`, microseconds
/// unless the interface says otherwise). `pcap-file` hands the raw 64-bit count over as if it
/// were nanoseconds.
fn scale_timestamp(
    raw: std::time::Duration,
    interface: Option<&InterfaceDescriptionBlock<'_>>,
) -> std::time::Duration {
    let resol = interface
        .and_then(|i| {
            i.options.iter().find_map(|o| match o {
                InterfaceDescriptionOption::IfTsResol(r) => Some(*r),
                _ => None,
            })
        })
        .unwrap_or(6);
    let ticks = raw.as_nanos();
    let nanos = if resol & 0x80 == 0 {
        // 10^-resol seconds per tick.
        let exp = u32::from(resol);
        if exp <= 9 {
            ticks.saturating_mul(10u128.pow(9 - exp))
        } else {
            ticks / 10u128.pow((exp - 9).min(38))
        }
    } else {
        // 2^-resol seconds per tick.
        let exp = u32::from(resol & 0x7f).min(120);
        ticks.saturating_mul(1_000_000_000) >> exp
    };
    std::time::Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

impl<R: Read> Iterator for CaptureReader<R> {
    type Item = Result<PcapRecord, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_frame();
        match &item {
            Some(Ok(_)) => self.frames += 1,
            // After an error the stream position is unknown: stop rather than loop on garbage.
            Some(Err(_)) | None => self.done = true,
        }
        item
    }
}

fn classify(e: PcapError, frames: usize) -> CaptureError {
    match e {
        PcapError::IncompleteBuffer => CaptureError::Truncated { frames },
        PcapError::IoError(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            CaptureError::Truncated { frames }
        }
        source => CaptureError::Malformed { frames, source },
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// Writes Ethernet frames to a classic pcap file (microsecond timestamps, snap length 65535) or,
/// when frames carry comments, a pcapng file (nanosecond timestamps; Wireshark shows each comment
/// as `pkt_comment`).
pub struct CaptureWriter<W: Write = BufWriter<File>> {
    inner: Sink<W>,
    frames: usize,
}

enum Sink<W: Write> {
    Pcap(PcapWriter<W>),
    PcapNg(PcapNgWriter<W>),
}

impl CaptureWriter {
    /// Creates (or truncates) `path` as a classic pcap file.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        Self::new(create_file(path.as_ref())?)
    }

    /// Creates (or truncates) `path` as a pcapng file, whose frames may carry comments.
    pub fn create_pcapng(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        Self::pcapng(create_file(path.as_ref())?)
    }
}

fn create_file(path: &Path) -> Result<BufWriter<File>, CaptureError> {
    let file = File::create(path).map_err(|source| CaptureError::Open {
        path: path.to_owned(),
        source,
    })?;
    Ok(BufWriter::new(file))
}

impl<W: Write> CaptureWriter<W> {
    /// Starts a classic pcap capture on any writer.
    pub fn new(writer: W) -> Result<Self, CaptureError> {
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            snaplen: 65535,
            ..PcapHeader::default()
        };
        let inner = PcapWriter::with_header(writer, header).map_err(CaptureError::Write)?;
        Ok(CaptureWriter {
            inner: Sink::Pcap(inner),
            frames: 0,
        })
    }

    /// Starts a pcapng capture (one Ethernet interface, nanosecond timestamps) on any writer.
    pub fn pcapng(writer: W) -> Result<Self, CaptureError> {
        let mut inner = PcapNgWriter::new(writer).map_err(CaptureError::Write)?;
        let interface = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 65535,
            // pcap-file writes the timestamp's nanosecond count: say so.
            options: vec![InterfaceDescriptionOption::IfTsResol(9)],
        };
        inner
            .write_pcapng_block(interface)
            .map_err(CaptureError::Write)?;
        Ok(CaptureWriter {
            inner: Sink::PcapNg(inner),
            frames: 0,
        })
    }

    /// Appends one frame captured at `timestamp`.
    pub fn write_frame(
        &mut self,
        timestamp: std::time::Duration,
        frame: &[u8],
    ) -> Result<(), CaptureError> {
        self.write_annotated(timestamp, frame, None)
    }

    /// Appends one frame with a comment (kept in pcapng; a classic pcap file has no place for
    /// it and drops it).
    pub fn write_annotated(
        &mut self,
        timestamp: std::time::Duration,
        frame: &[u8],
        comment: Option<&str>,
    ) -> Result<(), CaptureError> {
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        match &mut self.inner {
            Sink::Pcap(w) => w
                .write_packet(&PcapPacket::new(timestamp, len, frame))
                .map(drop),
            Sink::PcapNg(w) => w
                .write_pcapng_block(EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp,
                    original_len: len,
                    data: frame.into(),
                    options: comment
                        .map(|c| EnhancedPacketOption::Comment(c.into()))
                        .into_iter()
                        .collect(),
                })
                .map(drop),
        }
        .map_err(CaptureError::Write)?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames_written(&self) -> usize {
        self.frames
    }

    /// Flushes and returns the writer.
    pub fn finish(self) -> Result<W, CaptureError> {
        let mut w = match self.inner {
            Sink::Pcap(w) => w.into_writer(),
            Sink::PcapNg(w) => w.into_inner(),
        };
        w.flush()
            .map_err(|e| CaptureError::Write(PcapError::IoError(e)))?;
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors() -> PathBuf {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crates/roce-proto/tests/vectors"
        ))
    }

    #[test]
    fn reads_every_frame_of_a_shared_vector() {
        let reader = CaptureReader::open(vectors().join("rc_pingpong_send_64.pcap")).unwrap();
        let frames: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
        assert_eq!(frames.len(), 32, "the vectors README counts 32 packets");
        assert!(frames.iter().all(|f| f.data.len() as u32 == f.orig_len));
    }

    #[test]
    fn written_capture_reads_back_identically() {
        let frames = [vec![1u8; 60], vec![2u8; 1514], vec![3u8; 14]];
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        for (i, f) in frames.iter().enumerate() {
            w.write_frame(std::time::Duration::from_micros(i as u64 * 7), f)
                .unwrap();
        }
        assert_eq!(w.frames_written(), 3);
        let bytes = w.finish().unwrap();
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        let r = CaptureReader::from_reader_with_magic(&bytes[..], magic)
            .unwrap()
            .unwrap();
        let back: Vec<_> = r.collect::<Result<_, _>>().unwrap();
        assert_eq!(back.len(), 3);
        for (i, (a, b)) in frames.iter().zip(&back).enumerate() {
            assert_eq!(a, &b.data);
            assert_eq!(b.timestamp, std::time::Duration::from_micros(i as u64 * 7));
        }
    }

    #[test]
    fn pcapng_keeps_comments_and_nanoseconds() {
        let mut w = CaptureWriter::pcapng(Vec::new()).unwrap();
        w.write_annotated(std::time::Duration::from_nanos(1_234), &[1u8; 60], None)
            .unwrap();
        w.write_annotated(
            std::time::Duration::from_nanos(5_678_901),
            &[2u8; 80],
            Some("fault: dropped"),
        )
        .unwrap();
        let bytes = w.finish().unwrap();
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        assert_eq!(magic, PCAPNG_MAGIC);
        let back: Vec<_> = CaptureReader::from_reader_with_magic(&bytes[..], magic)
            .unwrap()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].timestamp, std::time::Duration::from_nanos(1_234));
        assert_eq!(back[0].comment, None);
        assert_eq!(
            back[1].timestamp,
            std::time::Duration::from_nanos(5_678_901)
        );
        assert_eq!(back[1].comment.as_deref(), Some("fault: dropped"));
        assert_eq!(back[1].data, vec![2u8; 80]);
    }

    #[test]
    fn pcapng_timestamps_default_to_microseconds() {
        let raw = std::time::Duration::from_nanos(7);
        let plain = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![],
        };
        assert_eq!(
            scale_timestamp(raw, Some(&plain)),
            std::time::Duration::from_micros(7)
        );
        let binary = InterfaceDescriptionBlock {
            options: vec![InterfaceDescriptionOption::IfTsResol(0x80 | 10)],
            ..plain.clone()
        };
        // 2^-10 s per tick: 1024 ticks are one second.
        assert_eq!(
            scale_timestamp(std::time::Duration::from_nanos(1024), Some(&binary)),
            std::time::Duration::from_secs(1)
        );
    }

    #[test]
    fn truncated_capture_yields_frames_then_one_error() {
        let mut w = CaptureWriter::new(Vec::new()).unwrap();
        w.write_frame(std::time::Duration::ZERO, &[9u8; 100])
            .unwrap();
        w.write_frame(std::time::Duration::ZERO, &[8u8; 100])
            .unwrap();
        let bytes = w.finish().unwrap();
        let cut = &bytes[..bytes.len() - 30];
        let magic = [cut[0], cut[1], cut[2], cut[3]];
        let items: Vec<_> = CaptureReader::from_reader_with_magic(cut, magic)
            .unwrap()
            .unwrap()
            .collect();
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok());
        assert!(
            matches!(items[1], Err(CaptureError::Truncated { frames: 1 })),
            "{:?}",
            items[1]
        );
    }

    #[test]
    fn non_capture_file_is_rejected_with_its_name() {
        let dir = std::env::temp_dir().join(format!("roce-pcap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("not.pcap");
        std::fs::write(&path, b"hello world, not a capture").unwrap();
        let err = CaptureReader::open(&path).err().unwrap();
        assert!(
            err.to_string().contains("not a pcap or pcapng file"),
            "{err}"
        );
        let missing = CaptureReader::open(dir.join("missing.pcap")).err().unwrap();
        assert!(matches!(missing, CaptureError::Open { .. }));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
