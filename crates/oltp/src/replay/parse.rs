//! Reading a workload file: a MySQL/MariaDB general query log, a slow query log (best with
//! `long_query_time=0`, which logs every statement), or a plain SQL file — into the statements of
//! each original connection, in order.
//!
//! Files are read as bytes: statements may hold binary values, and the replay sends them back
//! byte for byte. A file that is none of the three, is empty, or ends in the middle of an entry is
//! refused with the line where it went wrong; nothing of its content goes into the message.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The kinds of workload file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Decided from the first lines.
    #[default]
    Auto,
    General,
    Slow,
    Sql,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Auto => "auto",
            Format::General => "general",
            Format::Slow => "slow",
            Format::Sql => "sql",
        })
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Format::Auto),
            "general" => Ok(Format::General),
            "slow" => Ok(Format::Slow),
            "sql" => Ok(Format::Sql),
            _ => Err(format!(
                "unknown replay format '{s}': use auto, general (general query log), slow (slow \
                 query log) or sql (statements separated by ';')"
            )),
        }
    }
}

/// One statement to replay, and the rows the log says it returned (slow logs record them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub sql: Vec<u8>,
    pub rows_logged: Option<u64>,
}

/// What a workload file holds: its format and the statements of each original connection (by
/// first appearance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub format: Format,
    pub sessions: Vec<Vec<Statement>>,
}

impl Workload {
    pub fn statements(&self) -> usize {
        self.sessions.iter().map(Vec::len).sum()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("{path}: {reason}")]
    Bad { path: String, reason: String },
}

fn bad(path: &Path, reason: impl Into<String>) -> ParseError {
    ParseError::Bad {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Reads and parses `path`.
pub fn read(path: &Path, format: Format) -> Result<Workload, ParseError> {
    let bytes = std::fs::read(path).map_err(|e| {
        bad(
            path,
            format!("cannot read the workload file ({e}); give --replay-file a readable log or SQL file"),
        )
    })?;
    parse(path, &bytes, format)
}

/// Parses a workload file's bytes (`path` only names it in errors).
pub fn parse(path: &Path, bytes: &[u8], format: Format) -> Result<Workload, ParseError> {
    let lines: Vec<&[u8]> = bytes
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    let format = match format {
        Format::Auto => detect(&lines),
        f => f,
    };
    let sessions = match format {
        Format::General => general(path, &lines)?,
        Format::Slow => slow(path, &lines)?,
        Format::Sql | Format::Auto => vec![sql(path, bytes)?],
    };
    let sessions: Vec<Vec<Statement>> = sessions.into_iter().filter(|s| !s.is_empty()).collect();
    if sessions.is_empty() {
        return Err(bad(
            path,
            format!(
                "no statement to replay in this {format} file; a slow log needs \
                 long_query_time=0 to log every statement, a general log needs general_log=ON \
                 while the application runs"
            ),
        ));
    }
    Ok(Workload { format, sessions })
}

fn starts(line: &[u8], prefix: &str) -> bool {
    line.starts_with(prefix.as_bytes())
}

/// A slow log has `# Time:`/`# User@Host:` headers; a general log has entries with a thread id
/// and a command; anything else is SQL.
fn detect(lines: &[&[u8]]) -> Format {
    for l in lines.iter().take(200) {
        if starts(l, "# Time:") || starts(l, "# User@Host:") {
            return Format::Slow;
        }
        if general_entry(l).is_some() {
            return Format::General;
        }
    }
    Format::Sql
}

/// The general log's commands (MySQL's and MariaDB's spellings).
const COMMANDS: [&str; 17] = [
    "Query",
    "Execute",
    "Init DB",
    "Connect",
    "Quit",
    "Prepare",
    "Close stmt",
    "Reset stmt",
    "Long Data",
    "Field List",
    "Statistics",
    "Ping",
    "Change user",
    "Set option",
    "Refresh",
    "Processlist",
    "Kill",
];

/// `[timestamp] id Command<TAB>argument`: the timestamp is MariaDB's `YYMMDD HH:MM:SS` or
/// MySQL's ISO 8601; later entries of the same second have none (MariaDB).
fn general_entry(line: &[u8]) -> Option<(u64, &str, &[u8])> {
    let tab = line.iter().position(|b| *b == b'\t');
    // Strip a leading timestamp: everything before the first tab when it looks like one.
    let rest = match tab {
        Some(t) if t > 0 && looks_like_time(&line[..t]) => &line[t + 1..],
        _ => line,
    };
    let rest = trim_start(rest);
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 20 {
        return None;
    }
    let id: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let after = trim_start(&rest[digits..]);
    for c in COMMANDS {
        if let Some(arg) = after.strip_prefix(c.as_bytes()) {
            if arg.is_empty() {
                return Some((id, c, arg));
            }
            if arg[0] == b'\t' {
                return Some((id, c, &arg[1..]));
            }
        }
    }
    None
}

fn looks_like_time(b: &[u8]) -> bool {
    let s = trim_ws(b);
    // 241201 23:12:09 (MariaDB) or 2026-12-01T23:12:09.123456Z (MySQL)
    let mariadb = s.len() >= 14 && s[..6].iter().all(u8::is_ascii_digit) && s[6] == b' ';
    let mysql =
        s.len() >= 19 && s[..4].iter().all(u8::is_ascii_digit) && s[4] == b'-' && s[10] == b'T';
    mariadb || mysql
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| **c == b' ' || **c == b'\t').count();
    &b[n..]
}

/// The lines a server writes at start-up into either log.
fn server_banner(line: &[u8]) -> bool {
    (line.windows(9).any(|w| w == b"Version: ") && line.ends_with(b"started with:"))
        || starts(line, "Tcp port:")
        || (starts(line, "Time") && line.windows(7).any(|w| w == b"Command"))
}

fn general(path: &Path, lines: &[&[u8]]) -> Result<Vec<Vec<Statement>>, ParseError> {
    let mut order: Vec<u64> = Vec::new();
    let mut by_thread: BTreeMap<u64, Vec<Statement>> = BTreeMap::new();
    // The statement continuation lines go to (thread, index) of the last entry, if it was one.
    let mut last: Option<(u64, usize)> = None;
    let mut entries = 0usize;
    for (i, line) in lines.iter().enumerate() {
        if let Some((id, cmd, arg)) = general_entry(line) {
            entries += 1;
            last = None;
            let sql = match cmd {
                "Query" | "Execute" => arg.to_vec(),
                "Init DB" => [b"USE `".as_slice(), arg, b"`"].concat(),
                _ => continue,
            };
            if !by_thread.contains_key(&id) {
                order.push(id);
            }
            let v = by_thread.entry(id).or_default();
            v.push(Statement {
                sql,
                rows_logged: None,
            });
            last = Some((id, v.len() - 1));
        } else if server_banner(line) {
            last = None;
        } else if let Some((id, idx)) = last {
            let s = &mut by_thread.get_mut(&id).expect("entry recorded")[idx].sql;
            s.push(b'\n');
            s.extend_from_slice(line);
        } else if !line.iter().all(u8::is_ascii_whitespace) && entries == 0 && i > 20 {
            return Err(bad(
                path,
                format!("line {} is not a general query log entry (no thread id and command); pass --replay-format=sql or slow if the file is one", i + 1),
            ));
        }
    }
    Ok(order
        .into_iter()
        .map(|id| {
            let mut v = by_thread.remove(&id).unwrap_or_default();
            // The trailing newline a general log puts after a multi-line statement.
            for s in &mut v {
                while s.sql.last().is_some_and(|c| *c == b'\n') {
                    s.sql.pop();
                }
            }
            v
        })
        .collect())
}

fn header_number(line: &[u8], key: &str) -> Option<u64> {
    let s = String::from_utf8_lossy(line);
    let at = s.find(key)? + key.len();
    s[at..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn slow(path: &Path, lines: &[&[u8]]) -> Result<Vec<Vec<Statement>>, ParseError> {
    let mut order: Vec<u64> = Vec::new();
    let mut by_thread: BTreeMap<u64, Vec<Statement>> = BTreeMap::new();
    let mut thread = 0u64;
    let mut rows: Option<u64> = None;
    let mut body: Vec<u8> = Vec::new();
    let mut body_from = 0usize;
    let mut flush = |thread: u64,
                     rows: Option<u64>,
                     body: &mut Vec<u8>,
                     from: usize|
     -> Result<(), ParseError> {
        let text = std::mem::take(body);
        let trimmed = trim_ws(&text);
        if trimmed.is_empty() {
            return Ok(());
        }
        let Some(sql) = trimmed.strip_suffix(b";") else {
            return Err(bad(
                path,
                format!(
                    "the entry starting at line {from} does not end with ';': the file is cut \
                     inside a statement (truncated?); cut it before that entry's '# Time:' line"
                ),
            ));
        };
        if !by_thread.contains_key(&thread) {
            order.push(thread);
        }
        by_thread.entry(thread).or_default().push(Statement {
            sql: sql.to_vec(),
            rows_logged: rows,
        });
        Ok(())
    };
    let mut seen_header = false;
    for (i, line) in lines.iter().enumerate() {
        if starts(line, "# ") || line == b"#" {
            if starts(line, "# Time:") || starts(line, "# User@Host:") {
                if !body.is_empty() {
                    flush(thread, rows, &mut body, body_from)?;
                }
                seen_header = true;
                rows = None;
            }
            if let Some(id) =
                header_number(line, "Thread_id:").or_else(|| header_number(line, " Id:"))
            {
                thread = id;
            }
            if let Some(n) = header_number(line, "Rows_sent:") {
                rows = Some(n);
            }
            continue;
        }
        if server_banner(line) {
            continue;
        }
        if !seen_header {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Err(bad(
                path,
                format!("line {} comes before any '# Time:' or '# User@Host:' header: not a slow query log", i + 1),
            ));
        }
        // The logger's own lines: the schema and the statement's timestamp.
        let l = trim_ws(line);
        let lower = l.to_ascii_lowercase();
        if (lower.starts_with(b"use ") || lower.starts_with(b"set timestamp="))
            && l.ends_with(b";")
            && body.is_empty()
        {
            continue;
        }
        if body.is_empty() {
            body_from = i + 1;
        } else {
            body.push(b'\n');
        }
        body.extend_from_slice(line);
        // A statement ends with ';' at the end of a line; what follows is the next one of the
        // same entry (a logged multi-statement) or nothing.
        if l.ends_with(b";") {
            flush(thread, rows, &mut body, body_from)?;
        }
    }
    if !body.is_empty() {
        flush(thread, rows, &mut body, body_from)?;
    }
    Ok(order
        .into_iter()
        .map(|id| by_thread.remove(&id).unwrap_or_default())
        .collect())
}

fn trim_ws(b: &[u8]) -> &[u8] {
    let start = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let end = b.len()
        - b[start..]
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_whitespace())
            .count();
    &b[start..end]
}

/// Statements separated by the delimiter (`;`, or what a `DELIMITER` line sets, as mysqldump's
/// triggers and routines use), outside quotes and comments.
fn sql(path: &Path, bytes: &[u8]) -> Result<Vec<Statement>, ParseError> {
    let mut out = Vec::new();
    let mut delim: Vec<u8> = b";".to_vec();
    let mut cur: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut line = 1usize;
    let mut stmt_line = 1usize;
    let at_line_start = |cur: &[u8]| trim_ws(cur).is_empty();
    while i < bytes.len() {
        let c = bytes[i];
        // DELIMITER at the start of a statement.
        if at_line_start(&cur)
            && bytes[i..].len() >= 10
            && bytes[i..i + 10].eq_ignore_ascii_case(b"DELIMITER ")
        {
            let end = bytes[i..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(bytes.len(), |p| i + p);
            let d = trim_ws(&bytes[i + 10..end]);
            if d.is_empty() {
                return Err(bad(
                    path,
                    format!("line {line}: DELIMITER without a delimiter"),
                ));
            }
            delim = d.to_vec();
            cur.clear();
            i = end;
            continue;
        }
        match c {
            b'\'' | b'"' | b'`' => {
                quoted(path, bytes, &mut i, &mut line, &mut cur)?;
                continue;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-')
                && bytes.get(i + 2).is_none_or(|b| b.is_ascii_whitespace()) =>
            {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') && bytes.get(i + 2) != Some(&b'!') => {
                block_comment(path, bytes, &mut i, &mut line)?;
                continue;
            }
            _ => {}
        }
        if bytes[i..].starts_with(&delim) {
            let s = trim_ws(&cur).to_vec();
            if !s.is_empty() {
                out.push(Statement {
                    sql: s,
                    rows_logged: None,
                });
            }
            cur.clear();
            i += delim.len();
            stmt_line = line;
            continue;
        }
        if c == b'\n' {
            line += 1;
        }
        if trim_ws(&cur).is_empty() && !c.is_ascii_whitespace() {
            stmt_line = line;
        }
        cur.push(c);
        i += 1;
    }
    if !trim_ws(&cur).is_empty() {
        return Err(bad(
            path,
            format!(
                "the statement starting on line {stmt_line} has no closing '{}': the file is cut \
                 inside a statement (truncated?), or add the delimiter",
                String::from_utf8_lossy(&delim)
            ),
        ));
    }
    Ok(out)
}

/// A quoted string or identifier starting at `bytes[*i]`, copied into `cur` whole (backslash
/// escapes outside backticks, doubled quotes), `*i` and `*line` moved past it.
fn quoted(
    path: &Path,
    bytes: &[u8],
    i: &mut usize,
    line: &mut usize,
    cur: &mut Vec<u8>,
) -> Result<(), ParseError> {
    let c = bytes[*i];
    let start_line = *line;
    cur.push(c);
    *i += 1;
    loop {
        let Some(&d) = bytes.get(*i) else {
            return Err(bad(path, format!("a quoted string opened on line {start_line} never closes: the file is cut inside a statement (truncated?)")));
        };
        cur.push(d);
        *i += 1;
        if d == b'\n' {
            *line += 1;
        }
        if d == b'\\' && c != b'`' {
            if let Some(&e) = bytes.get(*i) {
                cur.push(e);
                *i += 1;
                if e == b'\n' {
                    *line += 1;
                }
            }
            continue;
        }
        if d == c {
            // A doubled quote is an escaped one.
            if bytes.get(*i) == Some(&c) {
                cur.push(c);
                *i += 1;
                continue;
            }
            return Ok(());
        }
    }
}

/// A `/* … */` comment starting at `bytes[*i]` skipped (`/*!` ones are statements' text).
fn block_comment(
    path: &Path,
    bytes: &[u8],
    i: &mut usize,
    line: &mut usize,
) -> Result<(), ParseError> {
    let start_line = *line;
    *i += 2;
    loop {
        if *i + 1 >= bytes.len() {
            return Err(bad(
                path,
                format!("a comment opened on line {start_line} never closes (truncated?)"),
            ));
        }
        if bytes[*i] == b'\n' {
            *line += 1;
        }
        if bytes[*i] == b'*' && bytes[*i + 1] == b'/' {
            *i += 2;
            return Ok(());
        }
        *i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str, f: Format) -> Result<Workload, ParseError> {
        parse(Path::new("w.log"), text.as_bytes(), f)
    }

    fn sqls(w: &Workload) -> Vec<Vec<String>> {
        w.sessions
            .iter()
            .map(|s| {
                s.iter()
                    .map(|x| String::from_utf8_lossy(&x.sql).into_owned())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_mariadb_general_log_splits_by_connection() {
        let log =
            "/usr/sbin/mariadbd, Version: 10.11.18-MariaDB-0+deb12u1 (Debian 12). started with:\n\
Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock\n\
Time\t\t    Id Command\tArgument\n\
241201 23:12:09\t    31 Connect\tsbtest@localhost on sbtest using Socket\n\
\t\t    31 Query\tSELECT 1\n\
\t\t    32 Query\tSELECT c\n  FROM t\n  WHERE id = 2\n\
241201 23:12:10\t    31 Init DB\tother\n\
\t\t    31 Query\tINSERT INTO t VALUES ('a\tb')\n\
\t\t    32 Quit\t\n";
        let w = p(log, Format::Auto).unwrap();
        assert_eq!(w.format, Format::General);
        assert_eq!(
            sqls(&w),
            vec![
                vec!["SELECT 1", "USE `other`", "INSERT INTO t VALUES ('a\tb')"],
                vec!["SELECT c\n  FROM t\n  WHERE id = 2"],
            ]
        );
    }

    #[test]
    fn a_mysql_general_log_with_iso_times() {
        let log = "2026-12-01T23:12:09.123456Z\t   8 Connect\troot@localhost on  using Socket\n\
2026-12-01T23:12:09.123999Z\t   8 Query\tSELECT @@version\n";
        let w = p(log, Format::Auto).unwrap();
        assert_eq!(sqls(&w), vec![vec!["SELECT @@version"]]);
    }

    #[test]
    fn a_slow_log_keeps_rows_sent_and_drops_the_loggers_lines() {
        let log = "/usr/sbin/mariadbd, Version: 10.11.18-MariaDB (Debian 12). started with:\n\
Tcp port: 0  Unix socket: /tmp/s\n\
Time\t\t    Id Command\tArgument\n\
# Time: 241201 23:12:09\n\
# User@Host: sbtest[sbtest] @ localhost []\n\
# Thread_id: 31  Schema: sbtest  QC_hit: No\n\
# Query_time: 0.000123  Lock_time: 0.000012  Rows_sent: 3  Rows_examined: 3\n\
# Rows_affected: 0  Bytes_sent: 56\n\
use sbtest;\n\
SET timestamp=1733094729;\n\
SELECT id\n  FROM t;\n\
# User@Host: root[root] @ localhost []  Id:    44\n\
# Query_time: 0.000100  Lock_time: 0.000000 Rows_sent: 0  Rows_examined: 0\n\
SET timestamp=1733094730;\n\
UPDATE t SET a = 'x;y' WHERE id = 1;\n";
        let w = p(log, Format::Auto).unwrap();
        assert_eq!(w.format, Format::Slow);
        assert_eq!(
            sqls(&w),
            vec![
                vec!["SELECT id\n  FROM t"],
                vec!["UPDATE t SET a = 'x;y' WHERE id = 1"]
            ]
        );
        assert_eq!(w.sessions[0][0].rows_logged, Some(3));
        assert_eq!(w.sessions[1][0].rows_logged, Some(0));
    }

    #[test]
    fn sql_files_split_on_the_delimiter_outside_quotes_and_comments() {
        let text = "-- a dump\nCREATE TABLE t (a INT); /* c; */ INSERT INTO t VALUES (1),(2);\n\
/*!40101 SET NAMES utf8 */;\nINSERT INTO t VALUES ('it''s; fine', \"q;\");\n\
DELIMITER ;;\nCREATE TRIGGER x BEFORE INSERT ON t FOR EACH ROW BEGIN SET @a = 1; END ;;\nDELIMITER ;\nSELECT 1;\n";
        let w = p(text, Format::Auto).unwrap();
        assert_eq!(w.format, Format::Sql);
        assert_eq!(
            sqls(&w)[0],
            vec![
                "CREATE TABLE t (a INT)",
                "INSERT INTO t VALUES (1),(2)",
                "/*!40101 SET NAMES utf8 */",
                "INSERT INTO t VALUES ('it''s; fine', \"q;\")",
                "CREATE TRIGGER x BEFORE INSERT ON t FOR EACH ROW BEGIN SET @a = 1; END",
                "SELECT 1",
            ]
        );
    }

    #[test]
    fn hostile_and_truncated_files_are_refused_with_the_line() {
        let e = p("SELECT 1;\nINSERT INTO t VALUES ('abc", Format::Auto).unwrap_err();
        assert!(e.to_string().contains("line 2 never closes"), "{e}");
        let e = p("SELECT 1;\nSELECT 2", Format::Auto).unwrap_err();
        assert!(
            e.to_string()
                .contains("starting on line 2 has no closing ';'"),
            "{e}"
        );
        let e = p(
            "# Time: 241201 23:12:09\n# User@Host: a[a] @ b []\n# Thread_id: 1\nSELECT 1\n  FROM",
            Format::Auto,
        )
        .unwrap_err();
        assert!(e.to_string().contains("does not end with ';'"), "{e}");
        let e = p("", Format::Auto).unwrap_err();
        assert!(e.to_string().contains("no statement to replay"), "{e}");
        let e = p("SELECT 1;\n", Format::Slow).unwrap_err();
        assert!(e.to_string().contains("not a slow query log"), "{e}");
        // Random bytes: refused or parsed, never a panic.
        let mut x: u64 = 1;
        for _ in 0..300 {
            let bytes: Vec<u8> = (0..200)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            for f in [Format::Auto, Format::General, Format::Slow, Format::Sql] {
                let _ = parse(Path::new("r"), &bytes, f);
            }
        }
        // A message never quotes the file's content.
        let e = p("SELECT secret_value FROM t", Format::Sql).unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
