//! Packet capture of one endpoint's wire traffic into a pcap file. A
//! `Capture` owns the file, its size bound and its counters; the run loop
//! hands it every frame it receives (as it comes out of rx_burst) and every
//! frame it transmits (as it goes into tx_burst), stamped with the loop's own
//! clock. Writing never fails the run loop: once the next record would take
//! the file past its limit, or a write fails, nothing more is written and the
//! frames seen from then on are only counted. `finish` flushes and reports.
//!
//! The file is classic pcap (Ethernet link type, nanosecond timestamps),
//! readable by tcpdump, tshark and Wireshark; `scripts/wireshark/erpc.lua`
//! dissects the RPC header. Per frame nothing is allocated: the record
//! borrows the frame and goes into the file's `BufWriter`.

use crate::time::Instant;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Default bound on a capture file's size: a few seconds of a busy
/// endpoint, small enough never to fill a disk by accident.
pub const DEFAULT_CAPTURE_LIMIT: u64 = 64 << 20;

/// Largest frame stored whole; longer ones are cut (their real length is
/// kept in the record). Above the 65549-byte largest frame the wire allows.
const SNAPLEN: u32 = 262_144;

/// Bytes of the pcap file header.
const FILE_HEADER_LEN: u64 = 24;

/// Bytes of each record's header (timestamp, stored and original length).
const RECORD_HEADER_LEN: u64 = 16;

/// Buffered bytes before a write reaches the file: one syscall per ~40 small
/// frames, so capturing costs little on the run loop.
const WRITE_BUFFER: usize = 64 << 10;

/// Why a capture could not be created or stopped writing.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The size limit is below the 24-byte pcap file header.
    #[error("capture limit of {limit} bytes cannot hold the {FILE_HEADER_LEN}-byte pcap header")]
    LimitTooSmall {
        /// The limit asked for, in bytes.
        limit: u64,
    },
    /// Creating, writing or flushing the file failed.
    #[error("capture file {path}: {source}")]
    Io {
        /// The capture file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The pcap writer failed (header or record).
    #[error("capture file {path}: {source}")]
    Pcap {
        /// The capture file.
        path: PathBuf,
        /// The pcap writer's error.
        #[source]
        source: PcapError,
    },
}

/// What a capture wrote and what it could not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Frames written to the file.
    pub frames_written: u64,
    /// Bytes of the file, headers included.
    pub bytes_written: u64,
    /// Frames seen after the limit was reached (or a write failed), not written.
    pub frames_not_written: u64,
}

/// A bounded pcap writer for one endpoint.
pub struct Capture<W: Write = BufWriter<File>> {
    /// `None` once writing has stopped (limit reached or write error).
    writer: Option<PcapWriter<W>>,
    path: PathBuf,
    limit: u64,
    /// Run-loop time that corresponds to `wall_origin` (ns since the epoch).
    origin: Instant,
    wall_origin: u64,
    stats: CaptureStats,
    /// The first write error, reported by `finish`.
    error: Option<CaptureError>,
}

impl<W: Write> std::fmt::Debug for Capture<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("path", &self.path)
            .field("limit", &self.limit)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Capture {
    /// Creates (truncates) `path` and writes the pcap header. At most `limit`
    /// bytes will ever be in the file. `now` is the run loop's current time:
    /// it is matched to the wall clock once here, so records carry wall-clock
    /// timestamps that advance with the loop's clock.
    pub fn create(path: &Path, limit: u64, now: Instant) -> Result<Self, CaptureError> {
        let file = File::create(path).map_err(|source| CaptureError::Io {
            path: path.to_owned(),
            source,
        })?;
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Capture::with_writer(
            BufWriter::with_capacity(WRITE_BUFFER, file),
            path,
            limit,
            now,
            wall,
        )
    }

    /// Where worker `worker` of a process asked to capture into `path`
    /// writes: `path` itself for worker 0, `NAME.wN.EXT` for worker N (one
    /// file per worker: workers run on their own cores and never share a writer).
    pub fn worker_path(path: &Path, worker: u16) -> PathBuf {
        if worker == 0 {
            return path.to_owned();
        }
        let mut name = path.file_stem().unwrap_or_default().to_owned();
        name.push(format!(".w{worker}"));
        if let Some(ext) = path.extension() {
            name.push(".");
            name.push(ext);
        }
        path.with_file_name(name)
    }
}

impl<W: Write> Capture<W> {
    /// A capture into any writer (tests use a `Vec<u8>`); `path` only names
    /// it in errors. `wall_origin` is the wall-clock time of `now`, in
    /// nanoseconds since the Unix epoch.
    pub fn with_writer(
        writer: W,
        path: &Path,
        limit: u64,
        now: Instant,
        wall_origin: u64,
    ) -> Result<Self, CaptureError> {
        if limit < FILE_HEADER_LEN {
            return Err(CaptureError::LimitTooSmall { limit });
        }
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
            ..PcapHeader::default()
        };
        let writer =
            PcapWriter::with_header(writer, header).map_err(|source| CaptureError::Pcap {
                path: path.to_owned(),
                source,
            })?;
        Ok(Capture {
            writer: Some(writer),
            path: path.to_owned(),
            limit,
            origin: now,
            wall_origin,
            stats: CaptureStats {
                bytes_written: FILE_HEADER_LEN,
                ..CaptureStats::default()
            },
            error: None,
        })
    }

    /// Records one frame seen at `now` (or counts it, once writing has stopped).
    #[inline]
    pub fn record(&mut self, now: Instant, frame: &[u8]) {
        let Some(writer) = self.writer.as_mut() else {
            self.stats.frames_not_written += 1;
            return;
        };
        let stored = frame.len().min(SNAPLEN as usize);
        let size = RECORD_HEADER_LEN + stored as u64;
        if self.stats.bytes_written + size > self.limit {
            self.stop(None);
            return;
        }
        let ns = self.wall_origin + (now - self.origin).as_nanos();
        let ts = std::time::Duration::from_nanos(ns);
        let packet = PcapPacket::new(ts, frame.len() as u32, &frame[..stored]);
        match writer.write_packet(&packet) {
            Ok(_) => {
                self.stats.frames_written += 1;
                self.stats.bytes_written += size;
            }
            Err(source) => {
                let path = self.path.clone();
                self.stop(Some(CaptureError::Pcap { path, source }));
            }
        }
    }

    /// Whether frames are still being written (the limit not reached, no error).
    pub fn is_writing(&self) -> bool {
        self.writer.is_some()
    }

    /// Counters so far.
    pub fn stats(&self) -> CaptureStats {
        self.stats
    }

    /// The capture file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bound on the file's size in bytes (pcap header included).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Flushes the file; the counters, or the first write error.
    pub fn finish(mut self) -> Result<CaptureStats, CaptureError> {
        if let Some(w) = self.writer.take() {
            self.flush(w);
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.stats),
        }
    }

    /// The writer, unflushed (tests of the layers read what was written).
    #[cfg(test)]
    pub(crate) fn take_writer_for_test(self) -> W {
        self.writer.expect("still writing").into_writer()
    }

    /// Stops writing (the current frame is not written) and flushes what was.
    #[cold]
    fn stop(&mut self, error: Option<CaptureError>) {
        self.stats.frames_not_written += 1;
        if self.error.is_none() {
            self.error = error;
        }
        if let Some(w) = self.writer.take() {
            self.flush(w);
        }
    }

    fn flush(&mut self, writer: PcapWriter<W>) {
        if let Err(source) = writer.into_writer().flush() {
            if self.error.is_none() {
                self.error = Some(CaptureError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    const WALL: u64 = 1_700_000_000_123_456_789;

    fn capture(limit: u64) -> Capture<Vec<u8>> {
        Capture::with_writer(
            Vec::new(),
            Path::new("test.pcap"),
            limit,
            Instant(1_000),
            WALL,
        )
        .unwrap()
    }

    /// The bytes written so far (flushing a `Vec` is a no-op).
    fn bytes(c: Capture<Vec<u8>>) -> Vec<u8> {
        c.writer.expect("still writing").into_writer()
    }

    fn read_all(bytes: &[u8]) -> Vec<(u64, u32, Vec<u8>)> {
        let mut r = PcapReader::new(bytes).unwrap();
        assert_eq!(r.header().datalink, DataLink::ETHERNET);
        assert_eq!(r.header().ts_resolution, TsResolution::NanoSecond);
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            out.push((p.timestamp.as_nanos() as u64, p.orig_len, p.data.to_vec()));
        }
        out
    }

    #[test]
    fn test_records_frames_with_loop_timestamps() {
        let mut c = capture(DEFAULT_CAPTURE_LIMIT);
        c.record(Instant(1_000), &[1u8; 60]);
        c.record(Instant(2_500), &[2u8; 80]);
        assert_eq!(
            c.stats(),
            CaptureStats {
                frames_written: 2,
                bytes_written: 24 + 16 + 60 + 16 + 80,
                frames_not_written: 0,
            }
        );
        let bytes = bytes(c);
        assert_eq!(bytes.len() as u64, 24 + 16 + 60 + 16 + 80);
        let frames = read_all(&bytes);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0], (WALL, 60, vec![1u8; 60]));
        assert_eq!(frames[1], (WALL + 1_500, 80, vec![2u8; 80]));
    }

    #[test]
    fn test_stops_at_limit_and_counts() {
        // Room for the header and exactly three 100-byte frames.
        let limit = 24 + 3 * (16 + 100);
        let mut c = capture(limit);
        for i in 0..3 {
            c.record(Instant(1_000 + i), &[i as u8; 100]);
        }
        assert!(c.is_writing());
        assert_eq!(c.stats().bytes_written, limit);
        // Even a frame that would fit is not written once the limit was hit:
        // the file stays a prefix of the traffic.
        c.record(Instant(2_000), &[9u8; 100]);
        assert!(!c.is_writing());
        c.record(Instant(2_001), &[9u8; 1]);
        c.record(Instant(2_002), &[9u8; 100]);
        let stats = c.stats();
        assert_eq!(stats.frames_written, 3);
        assert_eq!(stats.frames_not_written, 3);
        assert_eq!(stats.bytes_written, limit);
        assert_eq!(c.finish().unwrap(), stats);
    }

    #[test]
    fn test_limit_is_a_file_size_bound() {
        let mut c = capture(24 + 16 + 100 + 50);
        c.record(Instant(1_000), &[0u8; 100]);
        c.record(Instant(1_001), &[0u8; 100]);
        assert_eq!(c.stats().frames_written, 1);
        assert_eq!(c.stats().frames_not_written, 1);
        assert!(c.stats().bytes_written <= c.limit());
        assert!(matches!(
            Capture::with_writer(Vec::new(), Path::new("x"), 23, Instant(0), 0),
            Err(CaptureError::LimitTooSmall { limit: 23 })
        ));
    }

    #[test]
    fn test_long_frames_are_cut_to_snaplen() {
        let mut c = capture(DEFAULT_CAPTURE_LIMIT);
        let big = vec![7u8; SNAPLEN as usize + 10];
        c.record(Instant(1_000), &big);
        // Read the record header by hand: pcap-file's reader rejects
        // orig_len > snaplen, which tcpdump and Wireshark accept.
        let bytes = bytes(c);
        let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
        assert_eq!(u32_at(24 + 8), SNAPLEN, "stored length");
        assert_eq!(u32_at(24 + 12), SNAPLEN + 10, "original length");
        assert_eq!(bytes.len(), 24 + 16 + SNAPLEN as usize);
    }

    #[test]
    fn test_write_error_stops_and_is_reported() {
        /// Accepts the file header, then fails.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.0 >= 24 {
                    return Err(std::io::Error::other("disk full"));
                }
                self.0 += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut c =
            Capture::with_writer(Full(0), Path::new("f.pcap"), 1 << 20, Instant(0), 0).unwrap();
        c.record(Instant(1), &[0u8; 60]);
        c.record(Instant(2), &[0u8; 60]);
        assert!(!c.is_writing());
        assert_eq!(c.stats().frames_written, 0);
        assert_eq!(c.stats().frames_not_written, 2);
        let err = c.finish().unwrap_err().to_string();
        assert!(err.contains("f.pcap"), "{err}");
    }

    #[test]
    fn test_worker_paths() {
        let p = Path::new("/tmp/run.pcap");
        assert_eq!(Capture::worker_path(p, 0), PathBuf::from("/tmp/run.pcap"));
        assert_eq!(
            Capture::worker_path(p, 3),
            PathBuf::from("/tmp/run.w3.pcap")
        );
        assert_eq!(
            Capture::worker_path(Path::new("out"), 1),
            PathBuf::from("out.w1")
        );
    }
}
