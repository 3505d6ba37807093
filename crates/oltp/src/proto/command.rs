//! The commands the driver sends, encoded into a connection's output buffer: COM_QUERY,
//! COM_STMT_PREPARE, COM_STMT_EXECUTE with sysbench's parameter types, COM_STMT_CLOSE, COM_QUIT.

use super::error::DbError;
use super::packet::{begin_packet, finish_packet, put_lenenc};

pub(super) const COM_QUIT: u8 = 0x01;
pub(super) const COM_QUERY: u8 = 0x03;
pub(super) const COM_STMT_PREPARE: u8 = 0x16;
pub(super) const COM_STMT_EXECUTE: u8 = 0x17;
pub(super) const COM_STMT_CLOSE: u8 = 0x19;

pub(super) const MYSQL_TYPE_LONGLONG: u8 = 8;
pub(super) const MYSQL_TYPE_VAR_STRING: u8 = 253;

/// A statement parameter, sent with the wire types sysbench binds (BIGINT, VARCHAR).
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Int(i64),
    Str(&'a [u8]),
}

fn encode_sql_command(out: &mut Vec<u8>, command: u8, sql: &[u8]) -> Result<(), DbError> {
    let p = begin_packet(out, 0);
    out.push(command);
    out.extend_from_slice(sql);
    finish_packet(out, p)
}

pub fn encode_query(out: &mut Vec<u8>, sql: &[u8]) -> Result<(), DbError> {
    encode_sql_command(out, COM_QUERY, sql)
}

pub fn encode_prepare(out: &mut Vec<u8>, sql: &[u8]) -> Result<(), DbError> {
    encode_sql_command(out, COM_STMT_PREPARE, sql)
}

/// COM_STMT_EXECUTE (no cursor, one iteration). Like libmariadb, callers send the parameter types
/// with the first execution only; the server keeps them for later ones.
pub fn encode_execute(
    out: &mut Vec<u8>,
    stmt_id: u32,
    params: &[Param],
    send_types: bool,
) -> Result<(), DbError> {
    let p = begin_packet(out, 0);
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&stmt_id.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&1u32.to_le_bytes());
    if !params.is_empty() {
        out.extend(std::iter::repeat_n(0u8, params.len().div_ceil(8)));
        out.push(send_types as u8);
        if send_types {
            for prm in params {
                match prm {
                    Param::Int(_) => out.extend_from_slice(&[MYSQL_TYPE_LONGLONG, 0]),
                    Param::Str(_) => out.extend_from_slice(&[MYSQL_TYPE_VAR_STRING, 0]),
                }
            }
        }
        for prm in params {
            match prm {
                Param::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                Param::Str(s) => {
                    put_lenenc(out, s.len() as u64);
                    out.extend_from_slice(s);
                }
            }
        }
    }
    finish_packet(out, p)
}
