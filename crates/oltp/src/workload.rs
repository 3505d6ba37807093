//! What one event of each test executes: statement texts, the order of random draws, and how each
//! statement is put on the wire (prepared or as text).

use crate::proto::{encode_execute, encode_query, DbError, Expect, Param, Prepared};
use crate::rng::{Distribution, SbRng, Unique};
use crate::settings::{Settings, TestName};

pub const C_TEMPLATE: &[u8] =
    b"###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
pub const PAD_TEMPLATE: &[u8] = b"###########-###########-###########-###########-###########";

/// The statement kinds of sysbench's `stmt_defs` plus the scripts' own statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StmtKind {
    Begin,
    Commit,
    PointSelect,
    SimpleRange,
    SumRange,
    OrderRange,
    DistinctRange,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
    /// oltp_insert: always text, never prepared.
    TextInsert,
    RandomPoints,
    RandomRanges,
    /// bulk_insert: rows gathered client-side into 512 KiB multi-row INSERTs.
    BulkRow,
}

impl StmtKind {
    /// One statement per table (the `stmt_defs` kinds) rather than one per connection.
    fn per_table(self) -> bool {
        !matches!(
            self,
            StmtKind::Begin
                | StmtKind::Commit
                | StmtKind::TextInsert
                | StmtKind::RandomPoints
                | StmtKind::RandomRanges
                | StmtKind::BulkRow
        )
    }

    /// The SQL sysbench prepares for this kind and table, `?` marking parameters.
    pub fn sql(self, table: u32, s: &Settings) -> String {
        match self {
            StmtKind::Begin => "BEGIN".into(),
            StmtKind::Commit => "COMMIT".into(),
            StmtKind::PointSelect => format!("SELECT c FROM sbtest{table} WHERE id=?"),
            StmtKind::SimpleRange => {
                format!("SELECT c FROM sbtest{table} WHERE id BETWEEN ? AND ?")
            }
            StmtKind::SumRange => {
                format!("SELECT SUM(k) FROM sbtest{table} WHERE id BETWEEN ? AND ?")
            }
            StmtKind::OrderRange => {
                format!("SELECT c FROM sbtest{table} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            StmtKind::DistinctRange => {
                format!("SELECT DISTINCT c FROM sbtest{table} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            StmtKind::IndexUpdate => format!("UPDATE sbtest{table} SET k=k+1 WHERE id=?"),
            StmtKind::NonIndexUpdate => format!("UPDATE sbtest{table} SET c=? WHERE id=?"),
            StmtKind::Delete => format!("DELETE FROM sbtest{table} WHERE id=?"),
            StmtKind::Insert => {
                format!("INSERT INTO sbtest{table} (id, k, c, pad) VALUES (?, ?, ?, ?)")
            }
            StmtKind::TextInsert => {
                format!("INSERT INTO sbtest{table} (id, k, c, pad) VALUES (?, ?, '?', '?')")
            }
            StmtKind::RandomPoints => {
                let marks = vec!["?"; s.random_points.max(1) as usize].join(", ");
                format!("        SELECT id, k, c, pad\n          FROM sbtest1\n          WHERE k IN ({marks})\n        ")
            }
            StmtKind::RandomRanges => {
                let ranges =
                    vec!["k BETWEEN ? AND ?"; s.number_of_ranges.max(1) as usize].join(" OR ");
                format!("        SELECT count(k)\n          FROM sbtest1\n          WHERE {ranges}")
            }
            StmtKind::BulkRow => String::new(),
        }
    }
}

/// One step of an event: a random draw shared by a group of statements, or a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `get_table_num()` at the start of a statement group.
    DrawTable,
    /// oltp_delete: the id to delete.
    DrawId,
    /// delete_inserts: the id to delete and re-insert, and its new k.
    DrawIdK,
    Stmt(StmtKind),
}

/// The steps of one event, in sysbench's order.
pub fn plan(s: &Settings) -> Vec<Op> {
    use Op::*;
    use StmtKind::*;
    let t = &s.trx;
    let mut v = Vec::new();
    let group = |v: &mut Vec<Op>, kind: StmtKind, n: u32| {
        v.push(DrawTable);
        v.extend(std::iter::repeat_n(Stmt(kind), n as usize));
    };
    let reads = |v: &mut Vec<Op>| {
        group(v, PointSelect, t.point_selects);
        if t.range_selects {
            group(v, SimpleRange, t.simple_ranges);
            group(v, SumRange, t.sum_ranges);
            group(v, OrderRange, t.order_ranges);
            group(v, DistinctRange, t.distinct_ranges);
        }
    };
    let writes = |v: &mut Vec<Op>| {
        group(v, IndexUpdate, t.index_updates);
        group(v, NonIndexUpdate, t.non_index_updates);
        v.push(DrawTable);
        for _ in 0..t.delete_inserts {
            v.extend([DrawIdK, Stmt(Delete), Stmt(Insert)]);
        }
    };
    let trx = |v: &mut Vec<Op>, body: &dyn Fn(&mut Vec<Op>)| {
        if !t.skip_trx {
            v.push(Stmt(Begin));
        }
        body(v);
        if !t.skip_trx {
            v.push(Stmt(Commit));
        }
    };
    match s.test {
        TestName::OltpPointSelect => group(&mut v, PointSelect, 1),
        TestName::OltpReadOnly => trx(&mut v, &reads),
        TestName::OltpWriteOnly => trx(&mut v, &writes),
        TestName::OltpReadWrite => trx(&mut v, &|v| {
            reads(v);
            writes(v);
        }),
        TestName::OltpUpdateIndex => group(&mut v, IndexUpdate, t.index_updates),
        TestName::OltpUpdateNonIndex => group(&mut v, NonIndexUpdate, t.non_index_updates),
        TestName::OltpInsert => v.push(Stmt(TextInsert)),
        TestName::OltpDelete => v.extend([DrawTable, DrawId, Stmt(Delete)]),
        TestName::SelectRandomPoints => v.push(Stmt(RandomPoints)),
        TestName::SelectRandomRanges => v.push(Stmt(RandomRanges)),
        TestName::BulkInsert => v.push(Stmt(BulkRow)),
        // A scripted workload: its statements come from `tpcc::exec`, not from a fixed plan.
        TestName::Tpcc | TestName::Replay => {}
    }
    v
}

/// The distinct statement kinds a plan uses, in first-use order.
pub fn kinds(plan: &[Op]) -> Vec<StmtKind> {
    let mut v = Vec::new();
    for op in plan {
        if let Op::Stmt(k) = op {
            if !v.contains(k) {
                v.push(*k);
            }
        }
    }
    v
}

/// How a statement is sent on one connection.
#[derive(Clone, Debug)]
pub enum Handle {
    /// A server-side statement; the flag records that its parameter types were sent.
    Prepared(Prepared, bool),
    /// Text protocol: the SQL split at its `?` marks.
    Text(Vec<Vec<u8>>),
}

impl Handle {
    pub fn text(sql: &str) -> Handle {
        Handle::Text(sql.split('?').map(|p| p.as_bytes().to_vec()).collect())
    }
}

/// The statements of one connection, indexed by kind and table.
pub struct StmtTable {
    kinds: Vec<StmtKind>,
    tables: u32,
    handles: Vec<Handle>,
}

impl StmtTable {
    pub fn new(kinds: Vec<StmtKind>, tables: u32) -> StmtTable {
        StmtTable {
            kinds,
            tables,
            handles: Vec::new(),
        }
    }

    /// Every (kind, table, sql) this connection needs, in sysbench's preparation order.
    pub fn statements(&self, s: &Settings) -> Vec<(StmtKind, u32, String)> {
        let mut v = Vec::new();
        for &k in &self.kinds {
            if k.per_table() {
                for t in 1..=self.tables {
                    v.push((k, t, k.sql(t, s)));
                }
            } else if !matches!(k, StmtKind::TextInsert | StmtKind::BulkRow) {
                v.push((k, 0, k.sql(1, s)));
            }
        }
        v
    }

    pub fn set(&mut self, handles: Vec<Handle>) {
        self.handles = handles;
    }

    /// Prepared ids to close on the server.
    pub fn prepared_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.handles.iter().filter_map(|h| match h {
            Handle::Prepared(p, _) => Some(p.id),
            Handle::Text(_) => None,
        })
    }

    fn get(&mut self, kind: StmtKind, table: u32) -> &mut Handle {
        let mut i = 0;
        for &k in &self.kinds {
            if k == kind {
                if k.per_table() {
                    i += (table - 1) as usize;
                }
                return &mut self.handles[i];
            }
            if k.per_table() {
                i += self.tables as usize;
            } else if !matches!(k, StmtKind::TextInsert | StmtKind::BulkRow) {
                i += 1;
            }
        }
        unreachable!("statement kind {kind:?} is not part of this plan")
    }
}

/// The state one connection carries across the steps of an event.
pub struct Draws {
    pub table: u32,
    pub id: u32,
    pub k: u32,
    c: Vec<u8>,
    pad: Vec<u8>,
    ints: [i64; 64],
    text: Vec<u8>,
}

impl Default for Draws {
    fn default() -> Self {
        Draws {
            table: 1,
            id: 1,
            k: 1,
            c: Vec::with_capacity(128),
            pad: Vec::with_capacity(64),
            ints: [0; 64],
            text: Vec::with_capacity(512),
        }
    }
}

impl Draws {
    /// The last statement rendered as text, for error messages.
    pub fn last_text(&self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }
}

/// Read-only context of the workload, shared by all connections.
pub struct Workload {
    pub settings: Settings,
    /// The replayed file, for `replay`.
    pub replay: Option<std::sync::Arc<crate::replay::parse::Workload>>,
    pub plan: Vec<Op>,
    pub dist: Distribution,
    pub unique: Unique,
    table_size: u32,
}

impl Workload {
    pub fn new(settings: Settings, seed: u64) -> Workload {
        let dist = Distribution::new(&settings.rand);
        Workload {
            plan: plan(&settings),
            replay: None,
            dist,
            unique: Unique::new(seed),
            table_size: settings.schema.table_size as u32,
            settings,
        }
    }

    #[inline]
    pub fn get_id(&self, rng: &mut SbRng) -> u32 {
        self.dist.sample(rng, 1, self.table_size)
    }

    /// Executes a non-statement step.
    #[inline]
    pub fn draw(&self, op: Op, d: &mut Draws, rng: &mut SbRng) {
        match op {
            Op::DrawTable => d.table = rng.uniform(1, self.settings.schema.tables),
            Op::DrawId => d.id = self.get_id(rng),
            Op::DrawIdK => {
                d.id = self.get_id(rng);
                d.k = self.get_id(rng);
            }
            Op::Stmt(_) => {}
        }
    }

    /// Draws the statement's values and encodes it into `out`; returns what reply to expect.
    pub fn encode(
        &self,
        kind: StmtKind,
        tid: u32,
        d: &mut Draws,
        rng: &mut SbRng,
        stmts: &mut StmtTable,
        out: &mut Vec<u8>,
    ) -> Result<Expect, DbError> {
        if kind == StmtKind::TextInsert {
            self.text_insert(d, rng, out)?;
            return Ok(Expect::Result);
        }
        let (n_ints, strs) = self.draw_values(kind, tid, d, rng);
        let mut params: [Param; 66] = [Param::Int(0); 66];
        let mut n = 0;
        // Parameter order: NonIndexUpdate is (c, id); Insert is (id, k, c, pad); others ints only.
        if kind == StmtKind::NonIndexUpdate {
            params[0] = Param::Str(&d.c);
            params[1] = Param::Int(d.ints[0]);
            n = 2;
        } else {
            for i in 0..n_ints {
                params[n] = Param::Int(d.ints[i]);
                n += 1;
            }
            if strs & 1 != 0 {
                params[n] = Param::Str(&d.c);
                n += 1;
            }
            if strs & 2 != 0 {
                params[n] = Param::Str(&d.pad);
                n += 1;
            }
        }
        let table = if kind.per_table() { d.table } else { 1 };
        send(stmts.get(kind, table), &params[..n], &mut d.text, out)?;
        Ok(Expect::Result)
    }

    /// Draws the values of statement `kind` into `d`, in sysbench's order; returns how many
    /// integers it takes and which strings (bit 0: c, bit 1: pad).
    #[inline]
    fn draw_values(&self, kind: StmtKind, tid: u32, d: &mut Draws, rng: &mut SbRng) -> (usize, u8) {
        let s = &self.settings;
        let range = |id: u32| id as i64 + s.trx.range_size as i64 - 1;
        match kind {
            StmtKind::Begin | StmtKind::Commit => (0, 0),
            StmtKind::PointSelect | StmtKind::IndexUpdate => {
                d.ints[0] = self.get_id(rng) as i64;
                (1, 0)
            }
            StmtKind::SimpleRange
            | StmtKind::SumRange
            | StmtKind::OrderRange
            | StmtKind::DistinctRange => {
                let id = self.get_id(rng);
                d.ints[0] = id as i64;
                d.ints[1] = range(id);
                (2, 0)
            }
            StmtKind::NonIndexUpdate => {
                rng.fill_template(C_TEMPLATE, &mut d.c);
                d.ints[0] = self.get_id(rng) as i64;
                (1, 1)
            }
            StmtKind::Delete => {
                d.ints[0] = d.id as i64;
                (1, 0)
            }
            StmtKind::Insert => {
                rng.fill_template(C_TEMPLATE, &mut d.c);
                rng.fill_template(PAD_TEMPLATE, &mut d.pad);
                d.ints[0] = d.id as i64;
                d.ints[1] = d.k as i64;
                (2, 3)
            }
            StmtKind::RandomPoints | StmtKind::RandomRanges => {
                (self.draw_random(kind, tid, d, rng), 0)
            }
            StmtKind::TextInsert => unreachable!("encoded whole by text_insert"),
            StmtKind::BulkRow => unreachable!("bulk rows are buffered by the runner"),
        }
    }

    /// select_random_points / select_random_ranges: each connection draws from its own slice of
    /// the key space, as sysbench does; returns how many integers were drawn.
    #[inline]
    fn draw_random(&self, kind: StmtKind, tid: u32, d: &mut Draws, rng: &mut SbRng) -> usize {
        let s = &self.settings;
        let rlen = s.schema.table_size as f64 / s.threads as f64;
        let rmin = (rlen * tid as f64) as u32;
        let rmax = (rlen * tid as f64 + rlen) as u32;
        if kind == StmtKind::RandomPoints {
            let n_ints = s.random_points.clamp(1, 64) as usize;
            for i in 0..n_ints {
                d.ints[i] = self.dist.sample(rng, rmin, rmax) as i64;
            }
            n_ints
        } else {
            let n = s.number_of_ranges.clamp(1, 32) as usize;
            for i in 0..n {
                let v = self.dist.sample(rng, rmin, rmax) as i64;
                d.ints[2 * i] = v;
                d.ints[2 * i + 1] = v + s.delta as i64;
            }
            2 * n
        }
    }

    /// bulk_insert's text INSERT of one row into a random table, its values drawn here.
    fn text_insert(
        &self,
        d: &mut Draws,
        rng: &mut SbRng,
        out: &mut Vec<u8>,
    ) -> Result<(), DbError> {
        let s = &self.settings;
        let table = rng.uniform(1, s.schema.tables);
        let k = self.get_id(rng);
        rng.fill_template(C_TEMPLATE, &mut d.c);
        rng.fill_template(PAD_TEMPLATE, &mut d.pad);
        let id: i64 = if s.schema.auto_inc {
            0
        } else {
            self.unique.next() as i64 - 2_147_483_648
        };
        let t = &mut d.text;
        t.clear();
        t.extend_from_slice(b"INSERT INTO sbtest");
        push_int(t, table as i64);
        t.extend_from_slice(b" (id, k, c, pad) VALUES (");
        push_int(t, id);
        t.extend_from_slice(b", ");
        push_int(t, k as i64);
        t.extend_from_slice(b", '");
        t.extend_from_slice(&d.c);
        t.extend_from_slice(b"', '");
        t.extend_from_slice(&d.pad);
        t.extend_from_slice(b"')");
        encode_query(out, t)
    }
}

/// A statement with its parameters into `out`: an EXECUTE of the prepared statement (its types
/// sent the first time), or the text with the values in place of the markers.
#[inline]
fn send(
    handle: &mut Handle,
    params: &[Param],
    text: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), DbError> {
    match handle {
        Handle::Prepared(p, types_sent) => {
            encode_execute(out, p.id, params, !*types_sent)?;
            *types_sent = true;
        }
        Handle::Text(parts) => {
            text.clear();
            for (i, part) in parts.iter().enumerate() {
                text.extend_from_slice(part);
                if i + 1 < parts.len() {
                    match params.get(i) {
                        Some(Param::Int(v)) => push_int(text, *v),
                        Some(Param::Str(s)) => {
                            text.push(b'\'');
                            text.extend_from_slice(s);
                            text.push(b'\'');
                        }
                        None => text.push(b'?'),
                    }
                }
            }
            encode_query(out, text)?;
        }
    }
    Ok(())
}

pub fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(test: TestName) -> Vec<Op> {
        plan(&Settings::new(test))
    }

    fn count(plan: &[Op], k: StmtKind) -> usize {
        plan.iter().filter(|o| **o == Op::Stmt(k)).count()
    }

    #[test]
    fn read_write_has_sysbench_composition() {
        let p = ops(TestName::OltpReadWrite);
        let stmts = p.iter().filter(|o| matches!(o, Op::Stmt(_))).count();
        assert_eq!(stmts, 20);
        assert_eq!(count(&p, StmtKind::PointSelect), 10);
        assert_eq!(p.iter().filter(|o| **o == Op::DrawTable).count(), 8);
        assert_eq!(p.first(), Some(&Op::Stmt(StmtKind::Begin)));
        assert_eq!(p.last(), Some(&Op::Stmt(StmtKind::Commit)));
    }

    #[test]
    fn point_select_forces_one_select_and_skip_trx_drops_begin() {
        let mut s = Settings::new(TestName::OltpPointSelect);
        s.trx.point_selects = 7;
        assert_eq!(count(&plan(&s), StmtKind::PointSelect), 1);
        let mut s = Settings::new(TestName::OltpReadOnly);
        s.trx.skip_trx = true;
        s.trx.range_selects = false;
        let p = plan(&s);
        assert_eq!(count(&p, StmtKind::Begin), 0);
        assert_eq!(count(&p, StmtKind::SimpleRange), 0);
        assert_eq!(p.len(), 11);
    }

    #[test]
    fn text_mode_renders_values_in_place() {
        let mut s = Settings::new(TestName::OltpUpdateNonIndex);
        s.schema.table_size = 100;
        let w = Workload::new(s.clone(), 1);
        let mut st = StmtTable::new(kinds(&w.plan), 1);
        let handles = st
            .statements(&s)
            .iter()
            .map(|(_, _, sql)| Handle::text(sql))
            .collect();
        st.set(handles);
        let mut d = Draws::default();
        let mut rng = SbRng::new(1, 1);
        let mut out = Vec::new();
        w.encode(
            StmtKind::NonIndexUpdate,
            0,
            &mut d,
            &mut rng,
            &mut st,
            &mut out,
        )
        .unwrap();
        let sql = String::from_utf8_lossy(&out[5..]).into_owned();
        assert!(sql.starts_with("UPDATE sbtest1 SET c='"), "{sql}");
        assert!(sql.contains("' WHERE id="), "{sql}");
        assert!(!sql.contains('?'));
    }
}
