//! Packet framing and the protocol's length-encoded integers.
//!
//! Every message is a sequence of packets: a 3-byte little-endian payload length, a sequence number,
//! then the payload. [`ReadBuf`] holds bytes read from the socket and hands out whole packets without
//! copying them, so a result set is walked in place and never turned into rows unless asked.

use super::error::DbError;
pub use super::int::{get_u16, get_u32};

/// Payloads of this size continue in the next packet; the driver never sends or expects them.
pub const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// Appends a packet header placeholder and returns the offset where the payload starts.
pub fn begin_packet(out: &mut Vec<u8>, seq: u8) -> usize {
    out.extend_from_slice(&[0, 0, 0, seq]);
    out.len()
}

/// Fills in the length of the packet begun at `payload_start`.
pub fn finish_packet(out: &mut [u8], payload_start: usize) -> Result<(), DbError> {
    let len = out.len() - payload_start;
    if len >= MAX_PAYLOAD {
        return Err(DbError::Protocol(format!(
            "a {len}-byte command does not fit one protocol packet (max {MAX_PAYLOAD})"
        )));
    }
    let h = payload_start - 4;
    out[h] = len as u8;
    out[h + 1] = (len >> 8) as u8;
    out[h + 2] = (len >> 16) as u8;
    Ok(())
}

pub fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    if v < 251 {
        out.push(v as u8);
    } else if v < 1 << 16 {
        out.push(0xFC);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v < 1 << 24 {
        out.push(0xFD);
        out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xFE);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Reads a length-encoded integer at `*pos`; `None` for the NULL marker (0xFB) or a short buffer.
pub fn get_lenenc(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let first = *buf.get(*pos)?;
    let (v, n) = match first {
        0..=250 => (first as u64, 1),
        0xFC => (
            u16::from_le_bytes(buf.get(*pos + 1..*pos + 3)?.try_into().ok()?) as u64,
            3,
        ),
        0xFD => {
            let b = buf.get(*pos + 1..*pos + 4)?;
            (b[0] as u64 | (b[1] as u64) << 8 | (b[2] as u64) << 16, 4)
        }
        0xFE => (
            u64::from_le_bytes(buf.get(*pos + 1..*pos + 9)?.try_into().ok()?),
            9,
        ),
        _ => return None,
    };
    *pos += n;
    Some(v)
}

/// Bytes received from one connection, consumed packet by packet.
pub struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for ReadBuf {
    fn default() -> Self {
        Self::with_capacity(64 * 1024)
    }
}

impl ReadBuf {
    pub fn with_capacity(n: usize) -> Self {
        ReadBuf {
            buf: vec![0; n],
            start: 0,
            end: 0,
        }
    }

    /// Space to read into; compacts or grows so that at least a few KiB are free.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end < 4096 {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < 4096 {
                let n = self.buf.len() * 2;
                self.buf.resize(n, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// The next complete packet's (sequence number, payload), consuming it.
    pub fn next_packet(&mut self) -> Result<Option<(u8, &[u8])>, DbError> {
        let avail = &self.buf[self.start..self.end];
        if avail.len() < 4 {
            return Ok(None);
        }
        let len = avail[0] as usize | (avail[1] as usize) << 8 | (avail[2] as usize) << 16;
        if len == MAX_PAYLOAD {
            return Err(DbError::Protocol(
                "the server sent a packet of 16 MiB or more, which this driver does not support"
                    .into(),
            ));
        }
        if avail.len() < 4 + len {
            // The rest arrives through `spare`, which grows the buffer as bytes come: room is
            // not reserved for the length a server merely announces.
            return Ok(None);
        }
        let seq = avail[3];
        let s = self.start + 4;
        self.start = s + len;
        Ok(Some((seq, &self.buf[s..s + len])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_roundtrip() {
        for v in [
            0u64,
            250,
            251,
            65535,
            65536,
            (1 << 24) - 1,
            1 << 24,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, v);
            let mut pos = 0;
            assert_eq!(get_lenenc(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn packets_split_across_reads_are_reassembled() {
        let mut wire = Vec::new();
        let p = begin_packet(&mut wire, 3);
        wire.extend_from_slice(&[7u8; 10_000]);
        finish_packet(&mut wire, p).unwrap();
        let mut rb = ReadBuf::with_capacity(1024);
        let mut fed = 0;
        let mut got = None;
        while fed < wire.len() {
            let spare = rb.spare();
            let n = spare.len().min(wire.len() - fed).min(700);
            spare[..n].copy_from_slice(&wire[fed..fed + n]);
            rb.filled(n);
            fed += n;
            if let Some((seq, payload)) = rb.next_packet().unwrap() {
                got = Some((seq, payload.len(), payload.iter().all(|&b| b == 7)));
            }
        }
        assert_eq!(got, Some((3, 10_000, true)));
        assert!(rb.is_empty());
    }
}
