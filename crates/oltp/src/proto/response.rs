//! A resumable parser of server replies.
//!
//! The parser is fed whatever bytes have arrived and either finishes a reply or waits for more, so
//! the same code serves blocking control connections and the non-blocking event loop of the runner.
//! Result-set rows are counted in place and only decoded when the caller asked to capture them.

use super::error::{DbError, ServerError};
use super::packet::{get_lenenc, get_u16, get_u32, ReadBuf};

/// `SERVER_MORE_RESULTS_EXISTS`: another result follows this one (multi-statement replies).
const MORE_RESULTS: u16 = 0x0008;

/// What a command returned, in the terms sysbench counts statements by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// A result set came back (the statement counts as a read).
    pub result_set: bool,
    pub rows: u64,
    /// Changed rows (the client does not ask for found rows).
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub warnings: u16,
}

/// A statement prepared on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prepared {
    pub id: u32,
    pub params: u16,
    pub columns: u16,
}

#[derive(Debug)]
pub enum Reply {
    Done(Outcome),
    Prepared(Prepared),
    Error(ServerError),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// COM_QUERY or COM_STMT_EXECUTE: OK, ERR or result set(s).
    Result,
    /// COM_STMT_PREPARE: prepare-OK with parameter and column definitions.
    Prepare,
}

#[derive(Clone, Copy)]
enum Phase {
    Start,
    Columns(u64),
    ColumnsEof,
    Rows,
    PrepDefs(u8),
}

pub type TextRow = Vec<Option<String>>;

pub struct ResponseParser {
    expect: Expect,
    phase: Phase,
    outcome: Outcome,
    prepared: Option<Prepared>,
    capture: Option<Vec<TextRow>>,
    /// MARIADB_CLIENT_CACHE_METADATA was negotiated: column counts carry a "metadata follows" byte.
    metadata_flag: bool,
}

impl ResponseParser {
    pub fn new(expect: Expect) -> Self {
        ResponseParser {
            expect,
            phase: Phase::Start,
            outcome: Outcome::default(),
            prepared: None,
            capture: None,
            metadata_flag: false,
        }
    }

    pub fn set_metadata_flag(&mut self, on: bool) {
        self.metadata_flag = on;
    }

    /// Keeps text-protocol rows so that [`ResponseParser::take_rows`] can return them.
    pub fn capture_rows(&mut self, on: bool) {
        self.capture = on.then(Vec::new);
    }

    pub fn reset(&mut self, expect: Expect) {
        self.expect = expect;
        self.phase = Phase::Start;
        self.outcome = Outcome::default();
        self.prepared = None;
        if let Some(rows) = self.capture.as_mut() {
            rows.clear();
        }
    }

    /// The rows captured so far, capture staying on for the next reply.
    pub fn take_captured(&mut self) -> Vec<TextRow> {
        self.capture
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub fn take_rows(&mut self) -> Vec<TextRow> {
        self.capture.take().unwrap_or_default()
    }

    /// Consumes complete packets from `rb`; `Some` once the reply is complete.
    pub fn feed(&mut self, rb: &mut ReadBuf) -> Result<Option<Reply>, DbError> {
        while let Some((_, p)) = rb.next_packet()? {
            let first = *p
                .first()
                .ok_or_else(|| DbError::Protocol("empty packet".into()))?;
            let is_eof = first == 0xFE && p.len() < 9;
            match self.phase {
                Phase::Start => {
                    if first == 0xFF {
                        return Ok(Some(Reply::Error(ServerError::parse(p))));
                    }
                    if self.expect == Expect::Prepare {
                        if first != 0 || p.len() < 12 {
                            return Err(DbError::Protocol("malformed prepare reply".into()));
                        }
                        let prep = Prepared {
                            id: get_u32(p, 1),
                            columns: get_u16(p, 5),
                            params: get_u16(p, 7),
                        };
                        self.prepared = Some(prep);
                        if prep.params == 0 && prep.columns == 0 {
                            return Ok(Some(Reply::Prepared(prep)));
                        }
                        self.phase =
                            Phase::PrepDefs((prep.params > 0) as u8 + (prep.columns > 0) as u8);
                        continue;
                    }
                    if first == 0x00 {
                        let mut pos = 1;
                        let affected = get_lenenc(p, &mut pos).unwrap_or(0);
                        let insert_id = get_lenenc(p, &mut pos).unwrap_or(0);
                        let status = get_u16(p, pos);
                        self.outcome.affected_rows += affected;
                        self.outcome.last_insert_id = insert_id;
                        self.outcome.warnings = get_u16(p, pos + 2);
                        if status & MORE_RESULTS == 0 {
                            return Ok(Some(Reply::Done(self.outcome)));
                        }
                        continue;
                    }
                    if first == 0xFB {
                        return Err(DbError::Protocol(
                            "the server asked for LOCAL INFILE data, which is not supported".into(),
                        ));
                    }
                    let mut pos = 0;
                    let n = get_lenenc(p, &mut pos)
                        .ok_or_else(|| DbError::Protocol("bad column count".into()))?;
                    self.outcome.result_set = true;
                    let metadata_follows = !self.metadata_flag || p.get(pos).copied() != Some(0);
                    self.phase = if metadata_follows && n > 0 {
                        Phase::Columns(n)
                    } else {
                        Phase::ColumnsEof
                    };
                }
                Phase::Columns(left) => {
                    self.phase = if left <= 1 {
                        Phase::ColumnsEof
                    } else {
                        Phase::Columns(left - 1)
                    };
                }
                Phase::ColumnsEof => {
                    self.phase = Phase::Rows;
                    if !is_eof {
                        // Cached metadata without the intermediate EOF: this is already a row.
                        if first == 0xFF {
                            return Ok(Some(Reply::Error(ServerError::parse(p))));
                        }
                        self.outcome.rows += 1;
                        if let Some(rows) = self.capture.as_mut() {
                            rows.push(decode_text_row(p));
                        }
                    }
                }
                Phase::Rows => {
                    if is_eof {
                        let status = get_u16(p, 3);
                        self.outcome.warnings = get_u16(p, 1);
                        if status & MORE_RESULTS == 0 {
                            return Ok(Some(Reply::Done(self.outcome)));
                        }
                        self.phase = Phase::Start;
                    } else if first == 0xFF {
                        return Ok(Some(Reply::Error(ServerError::parse(p))));
                    } else {
                        self.outcome.rows += 1;
                        if let Some(rows) = self.capture.as_mut() {
                            rows.push(decode_text_row(p));
                        }
                    }
                }
                Phase::PrepDefs(eofs_left) => {
                    // Parameter and column definitions each end with an EOF packet.
                    if is_eof {
                        if eofs_left <= 1 {
                            let prep = self.prepared.expect("set in Start");
                            return Ok(Some(Reply::Prepared(prep)));
                        }
                        self.phase = Phase::PrepDefs(eofs_left - 1);
                    }
                }
            }
        }
        Ok(None)
    }
}

fn decode_text_row(p: &[u8]) -> TextRow {
    let mut pos = 0;
    let mut row = Vec::new();
    while pos < p.len() {
        if p[pos] == 0xFB {
            row.push(None);
            pos += 1;
            continue;
        }
        let Some(len) = get_lenenc(p, &mut pos) else {
            break;
        };
        // A length from the wire is untrusted: a huge one must end at the packet, not wrap.
        let end = pos
            .saturating_add(len.min(usize::MAX as u64) as usize)
            .min(p.len());
        row.push(Some(String::from_utf8_lossy(&p[pos..end]).into_owned()));
        pos = end;
    }
    row
}

#[cfg(test)]
mod huge_length_tests {
    use super::*;

    #[test]
    fn a_row_announcing_a_huge_length_is_cut_at_the_packet_not_a_panic() {
        // 0xFE: an 8-byte length, here u64::MAX, then two bytes of data.
        let p = [
            0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, b'a', b'b',
        ];
        assert_eq!(decode_text_row(&p), vec![Some("ab".to_string())]);
        let p = [0x02, b'x', b'y', 0xFB, 0xFC, 0xFF];
        let r = decode_text_row(&p);
        assert_eq!(r[0], Some("xy".into()));
        assert_eq!(r[1], None);
    }
}
