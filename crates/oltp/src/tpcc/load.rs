//! `prepare` and `cleanup` for tpcc: sysbench-tpcc's tables, filled with its row counts and value
//! distributions.
//!
//! As the script: table copies are created (and their `item` table loaded, indexed and given its
//! foreign keys) spread over `--threads` connections, then warehouses are loaded spread the same
//! way, each connection with foreign-key checks off and autocommit on, rows sent as 512 KiB
//! multi-row INSERTs. Three differences on purpose: no 30-second pause between the two phases (the
//! script sleeps so that its parallel threads see each other's tables; here the phases are joined),
//! each warehouse's rows come from a generator seeded by warehouse and table copy (and
//! `--rand-seed`), so a prepare is reproducible whatever the thread count, and the tables are
//! analyzed at the end (see [`prepare`]).

use super::ddl::{create_tables, drop_tables, foreign_keys, indexes};
use super::*;
use crate::proto::Conn;
use crate::settings::Settings;
use crate::tables::{connect, ctx, per_table, Log, SchemaError, BULK_PACKET_SIZE};

/// A multi-row INSERT being gathered (sysbench's `bulk_insert_init/next/done`).
struct Bulk<'a> {
    conn: &'a mut Conn,
    what: String,
    sql: String,
    prefix_len: usize,
    rows: u64,
}

impl<'a> Bulk<'a> {
    fn new(conn: &'a mut Conn, table: &str, columns: &str) -> Bulk<'a> {
        let sql = format!("INSERT INTO {table} ({columns}) values");
        Bulk {
            conn,
            what: format!("loading {table}"),
            prefix_len: sql.len(),
            sql,
            rows: 0,
        }
    }

    fn push(&mut self, row: &str) -> Result<(), SchemaError> {
        if self.rows > 0 && self.sql.len() + row.len() + 1 > BULK_PACKET_SIZE {
            self.flush()?;
        }
        if self.rows > 0 {
            self.sql.push(',');
        }
        self.sql.push_str(row);
        self.rows += 1;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SchemaError> {
        if self.rows > 0 {
            self.conn.query(&self.sql).map_err(ctx(self.what.clone()))?;
            self.sql.truncate(self.prefix_len);
            self.rows = 0;
        }
        Ok(())
    }

    fn done(mut self) -> Result<(), SchemaError> {
        self.flush()
    }
}

/// What every loading session sets first, as the script's `db_connection_init` and `load_tables`.
fn session(conn: &mut Conn) -> Result<(), SchemaError> {
    conn.query("SET FOREIGN_KEY_CHECKS=0")
        .map_err(ctx("turning foreign key checks off"))?;
    conn.query("SET SESSION autocommit=1")
        .map_err(ctx("turning autocommit on"))?;
    Ok(())
}

fn rng_for(s: &Settings, copy: u32, warehouse: u32) -> SbRng {
    SbRng::new(
        s.rand.seed,
        0x7470_6363_0000_0000 | (copy as u64) << 16 | warehouse as u64,
    )
}

pub fn prepare(s: &Settings, log: Log) -> Result<(), SchemaError> {
    per_table(s, s.schema.tables, |conn, n| {
        session(conn)?;
        log(&format!("Creating tables: {n}\n"));
        for sql in create_tables(s, n) {
            conn.query(&sql)
                .map_err(ctx(format!("creating the tables of copy {n}")))?;
        }
        load_items(s, conn, n)?;
        log(&format!("Adding indexes {n} ... \n"));
        for sql in indexes(n) {
            conn.query(&sql)
                .map_err(ctx(format!("indexing copy {n}")))?;
        }
        if s.tpcc.use_fk {
            log(&format!("Adding FK {n} ... \n"));
            for sql in foreign_keys(n) {
                conn.query(&sql)
                    .map_err(ctx(format!("adding the foreign keys of copy {n}")))?;
            }
        }
        Ok(())
    })?;
    // Warehouses spread over the connections as the tables were (the item table is per copy).
    per_table(s, s.tpcc.scale, |conn, wh| {
        session(conn)?;
        for n in 1..=s.schema.tables {
            log(&format!("loading tables: {n} for warehouse: {wh}\n"));
            load_warehouse(s, conn, n, wh)?;
        }
        Ok(())
    })?;
    // Not in the script: fresh statistics. Right after a bulk load InnoDB's persistent statistics
    // may still describe nearly empty tables (they are refreshed in the background), and a
    // template stopped then keeps them. MySQL 9.7 then plans `check`'s check 10 as a hash join
    // that scans order_line once per customer (over 600 s at one warehouse; 0.4 s after ANALYZE),
    // and the benchmark's plans would depend on how far the refresh got before the stop.
    per_table(s, s.schema.tables, |conn, n| {
        let list: Vec<String> = super::TABLES.iter().map(|t| format!("{t}{n}")).collect();
        conn.query(&format!("ANALYZE TABLE {}", list.join(", ")))
            .map_err(ctx(format!("analyzing the tables of copy {n}")))?;
        Ok(())
    })
}

fn load_items(s: &Settings, conn: &mut Conn, n: u32) -> Result<(), SchemaError> {
    let mut rng = rng_for(s, n, 0);
    let table = format!("item{n}");
    let mut bulk = Bulk::new(conn, &table, "i_id, i_im_id, i_name, i_price, i_data");
    let mut row = String::with_capacity(128);
    let (mut name, mut data) = (String::new(), String::new());
    for id in 1..=MAXITEMS {
        let im_id = rng.uniform(1, 10_000);
        let price = rng.unit() * 100.0 + 1.0;
        // Not the standard's i_name: the script's, built to compress.
        name.clear();
        name.push_str(&format!("item-{im_id}-"));
        push_f6(price, &mut name);
        name.push('-');
        push_rand_string(&mut rng, "@@@@@", &mut name);
        data.clear();
        data.push_str("data-");
        data.push_str(&name);
        data.push('-');
        push_rand_string(&mut rng, "@@@@@", &mut data);
        row.clear();
        row.push_str(&format!("({id},{im_id},'{}',", &name[..name.len().min(24)]));
        push_f6(price, &mut row);
        row.push_str(&format!(",'{}')", &data[..data.len().min(50)]));
        bulk.push(&row)?;
    }
    bulk.done()
}

/// The address columns the script fills the same way for warehouses, districts and customers.
fn push_address(rng: &mut SbRng, out: &mut String) {
    for (i, t) in [
        "street1-@@@@@@@@@@",
        "street2-@@@@@@@@@@",
        "city-@@@@@@@@@@",
        "@@",
        "zip-#####",
    ]
    .iter()
    .enumerate()
    {
        if i > 0 {
            out.push_str("', '");
        }
        push_rand_string(rng, t, out);
    }
}

/// One warehouse of copy `n` of the tables, loaded table by table in sysbench-tpcc's order (the
/// generator's draws follow that order, so a load is reproducible).
fn load_warehouse(s: &Settings, conn: &mut Conn, n: u32, w: u32) -> Result<(), SchemaError> {
    let mut rng = rng_for(s, n, w);
    let rng = &mut rng;
    let mut row = String::with_capacity(1024);
    load_warehouse_row(rng, conn, n, w, &mut row)?;
    load_districts(rng, conn, n, w, &mut row)?;
    load_customers(rng, conn, n, w, &mut row)?;
    load_history(rng, conn, n, w, &mut row)?;
    let line_counts = load_orders(rng, conn, n, w, &mut row)?;
    load_stock(rng, conn, n, w, &mut row)?;
    conn.query(&format!(
        "INSERT INTO new_orders{n} (no_o_id, no_d_id, no_w_id) SELECT o_id, o_d_id, o_w_id FROM orders{n} WHERE o_id>{DELIVERED_ORDERS} and o_w_id={w}"
    ))
    .map_err(ctx(format!("loading new_orders{n}")))?;
    load_order_lines(rng, conn, n, w, &line_counts, &mut row)
}

/// The columns a warehouse and a district share: `'name', address, tax` (sysbench-tpcc draws
/// them in this order for both).
fn push_name_address_tax(rng: &mut SbRng, row: &mut String) {
    row.push('\'');
    push_rand_string(rng, "name-@@@@@", row);
    row.push_str("','");
    push_address(rng, row);
    row.push_str("', ");
    push_f6(rng.unit() * 0.2, row);
}

/// The warehouse's own row.
fn load_warehouse_row(
    rng: &mut SbRng,
    conn: &mut Conn,
    n: u32,
    w: u32,
    row: &mut String,
) -> Result<(), SchemaError> {
    let mut bulk = Bulk::new(
        conn,
        &format!("warehouse{n}"),
        "w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd",
    );
    row.push_str(&format!("({w}, "));
    push_name_address_tax(rng, row);
    row.push_str(",300000)");
    bulk.push(row)?;
    bulk.done()
}

/// Its districts.
fn load_districts(
    rng: &mut SbRng,
    conn: &mut Conn,
    n: u32,
    w: u32,
    row: &mut String,
) -> Result<(), SchemaError> {
    let mut bulk = Bulk::new(
        conn,
        &format!("district{n}"),
        "d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id",
    );
    for d in 1..=DIST_PER_WARE {
        row.clear();
        row.push_str(&format!("({d}, {w}, "));
        push_name_address_tax(rng, row);
        row.push_str(",30000,3001)");
        bulk.push(row)?;
    }
    bulk.done()
}

/// Every district's customers: the first thousand take every last name once.
fn load_customers(
    rng: &mut SbRng,
    conn: &mut Conn,
    n: u32,
    w: u32,
    row: &mut String,
) -> Result<(), SchemaError> {
    let mut bulk = Bulk::new(
        conn,
        &format!("customer{n}"),
        "c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, \
         c_delivery_cnt, c_data",
    );
    for d in 1..=DIST_PER_WARE {
        for c in 1..=CUST_PER_DIST {
            // The first thousand customers of a district take every last name once.
            let last = if c <= 1000 {
                last_name(c - 1)
            } else {
                last_name(nurand(rng, 255, 0, 999))
            };
            row.clear();
            row.push_str(&format!("({c}, {d}, {w}, '"));
            let first_len = rng.uniform(2, 10);
            push_rand_string(
                rng,
                &format!("first-{}", "@".repeat(first_len as usize)),
                row,
            );
            row.push_str(&format!("','OE','{last}','"));
            push_address(rng, row);
            row.push_str("','");
            push_rand_string(rng, "################", row);
            let credit = if rng.uniform(1, 100) > 10 { "GC" } else { "BC" };
            row.push_str(&format!("',NOW(),'{credit}',50000,"));
            push_f6(rng.unit() * 0.5, row);
            row.push_str(",-10,10,1,0,'");
            let len = rng.uniform(300, 500);
            push_repeated_letter(rng, len, row);
            row.push_str("' )");
            bulk.push(row)?;
        }
    }
    bulk.done()
}

/// One history row per customer.
fn load_history(
    rng: &mut SbRng,
    conn: &mut Conn,
    n: u32,
    w: u32,
    row: &mut String,
) -> Result<(), SchemaError> {
    let mut bulk = Bulk::new(
        conn,
        &format!("history{n}"),
        "h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data",
    );
    for d in 1..=DIST_PER_WARE {
        for c in 1..=CUST_PER_DIST {
            row.clear();
            row.push_str(&format!("({c}, {d}, {w}, {d}, {w}, NOW(), 10, '"));
            let len = rng.uniform(12, 24);
            push_repeated_letter(rng, len, row);
            row.push_str("' )");
            bulk.push(row)?;
        }
    }
    bulk.done()
}

/// One order per customer of each district, in a shuffled customer order; the number of lines of
/// each order is returned for `load_order_lines`.
fn load_orders(
    rng: &mut SbRng,
    conn: &mut Conn,
    n: u32,
    w: u32,
    row: &mut String,
) -> Result<Vec<u32>, SchemaError> {
    // One shuffled customer list for every district: each customer has exactly one order.
    let mut customers: Vec<u32> = (1..=ORDERS_PER_DIST).collect();
    for i in 0..customers.len() {
        let j = rng.uniform(i as u32, ORDERS_PER_DIST - 1) as usize;
        customers.swap(i, j);
    }
    let mut line_counts = vec![0u32; (DIST_PER_WARE * ORDERS_PER_DIST) as usize];
    let mut bulk = Bulk::new(
        conn,
        &format!("orders{n}"),
        "o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local",
    );
    for d in 1..=DIST_PER_WARE {
        for o in 1..=ORDERS_PER_DIST {
            let lines = rng.uniform(5, 15);
            line_counts[((d - 1) * ORDERS_PER_DIST + o - 1) as usize] = lines;
            let carrier = if o <= DELIVERED_ORDERS {
                rng.uniform(1, 10).to_string()
            } else {
                "NULL".to_string()
            };
            let c = customers[(o - 1) as usize];
            row.clear();
            row.push_str(&format!(
                "({o}, {d}, {w}, {c}, NOW(), {carrier}, {lines}, 1 )"
            ));
            bulk.push(row)?;
        }
    }
    bulk.done()?;
    Ok(line_counts)
}

/// The warehouse's stock of every item.
fn load_stock(
    rng: &mut SbRng,
    conn: &mut Conn,
    n: u32,
    w: u32,
    row: &mut String,
) -> Result<(), SchemaError> {
    let mut bulk = Bulk::new(
        conn,
        &format!("stock{n}"),
        "s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, \
          s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data",
    );
    for i in 1..=MAXITEMS {
        row.clear();
        let q = rng.uniform(10, 100);
        row.push_str(&format!("({i}, {w}, {q}"));
        for _ in 0..10 {
            row.push_str(",'");
            push_repeated_letter(rng, 24, row);
            row.push('\'');
        }
        row.push_str(",0,0,0,'");
        let len = rng.uniform(26, 50);
        push_repeated_letter(rng, len, row);
        row.push_str("')");
        bulk.push(row)?;
    }
    bulk.done()
}

/// Every order's lines (`line_counts[order]` of them).
fn load_order_lines(
    rng: &mut SbRng,
    conn: &mut Conn,
    n: u32,
    w: u32,
    line_counts: &[u32],
    row: &mut String,
) -> Result<(), SchemaError> {
    let mut bulk = Bulk::new(
        conn,
        &format!("order_line{n}"),
        "ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, \
           ol_quantity, ol_amount, ol_dist_info ",
    );
    for d in 1..=DIST_PER_WARE {
        for o in 1..=ORDERS_PER_DIST {
            let delivered = o <= DELIVERED_ORDERS;
            for l in 1..=line_counts[((d - 1) * ORDERS_PER_DIST + o - 1) as usize] {
                let item = rng.uniform(1, MAXITEMS);
                row.clear();
                row.push_str(&format!(
                    "({o}, {d}, {w}, {l}, {item}, {w}, {}, 5, ",
                    if delivered { "NOW()" } else { "NULL" }
                ));
                push_f6(if delivered { 0.0 } else { rng.unit() * 9999.99 }, row);
                row.push_str(", '");
                push_repeated_letter(rng, 24, row);
                row.push_str("' )");
                bulk.push(row)?;
            }
        }
    }
    bulk.done()
}

pub fn cleanup(s: &Settings, log: Log) -> Result<(), SchemaError> {
    let mut conn = connect(s, 0)?;
    conn.query("SET FOREIGN_KEY_CHECKS=0")
        .map_err(ctx("turning foreign key checks off"))?;
    for n in 1..=s.schema.tables {
        log(&format!("Dropping tables '{n}'..."));
        for sql in drop_tables(n) {
            conn.query(&sql)
                .map_err(ctx(format!("dropping copy {n}")))?;
        }
    }
    Ok(())
}
