//! The schema of one table copy: sysbench-tpcc's CREATE TABLE statements (MySQL spelling:
//! TINYINT and DATETIME), its secondary indexes and its optional foreign keys, with the same
//! names, so that `SHOW CREATE TABLE` reads the same whichever tool prepared the tables.

use crate::settings::Settings;

/// `CREATE TABLE IF NOT EXISTS` for every table of copy `n`, in the scripts' order.
pub fn create_tables(s: &Settings, n: u32) -> Vec<String> {
    let tail = format!(
        "/*! ENGINE = {} */ {}",
        s.schema.storage_engine, s.tpcc.table_options
    );
    let (hist_id, hist_pk) = if s.tpcc.force_pk {
        ("id int NOT NULL AUTO_INCREMENT,", ",PRIMARY KEY(id)")
    } else {
        ("", "")
    };
    let stock_dists: String = (1..=10)
        .map(|d| format!("s_dist_{d:02} char(24), "))
        .collect();
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS warehouse{n} (w_id smallint not null, w_name varchar(10), \
             w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20), w_state char(2), \
             w_zip char(9), w_tax decimal(4,2), w_ytd decimal(12,2), primary key (w_id)) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS district{n} (d_id tinyint not null, d_w_id smallint not null, \
             d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20), \
             d_state char(2), d_zip char(9), d_tax decimal(4,2), d_ytd decimal(12,2), \
             d_next_o_id int, primary key (d_w_id, d_id)) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS customer{n} (c_id int not null, c_d_id tinyint not null, \
             c_w_id smallint not null, c_first varchar(16), c_middle char(2), c_last varchar(16), \
             c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20), c_state char(2), \
             c_zip char(9), c_phone char(16), c_since datetime, c_credit char(2), \
             c_credit_lim bigint, c_discount decimal(4,2), c_balance decimal(12,2), \
             c_ytd_payment decimal(12,2), c_payment_cnt smallint, c_delivery_cnt smallint, \
             c_data text, PRIMARY KEY(c_w_id, c_d_id, c_id)) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS history{n} ({hist_id} h_c_id int, h_c_d_id tinyint, \
             h_c_w_id smallint, h_d_id tinyint, h_w_id smallint, h_date datetime, \
             h_amount decimal(6,2), h_data varchar(24) {hist_pk}) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS orders{n} (o_id int not null, o_d_id tinyint not null, \
             o_w_id smallint not null, o_c_id int, o_entry_d datetime, o_carrier_id tinyint, \
             o_ol_cnt tinyint, o_all_local tinyint, PRIMARY KEY(o_w_id, o_d_id, o_id)) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS new_orders{n} (no_o_id int not null, no_d_id tinyint not null, \
             no_w_id smallint not null, PRIMARY KEY(no_w_id, no_d_id, no_o_id)) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS order_line{n} (ol_o_id int not null, ol_d_id tinyint not null, \
             ol_w_id smallint not null, ol_number tinyint not null, ol_i_id int, \
             ol_supply_w_id smallint, ol_delivery_d datetime, ol_quantity tinyint, \
             ol_amount decimal(6,2), ol_dist_info char(24), \
             PRIMARY KEY(ol_w_id, ol_d_id, ol_o_id, ol_number)) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS stock{n} (s_i_id int not null, s_w_id smallint not null, \
             s_quantity smallint, {stock_dists}s_ytd decimal(8,0), s_order_cnt smallint, \
             s_remote_cnt smallint, s_data varchar(50), PRIMARY KEY(s_w_id, s_i_id)) {tail}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS item{n} (i_id int not null, i_im_id int, i_name varchar(24), \
             i_price decimal(5,2), i_data varchar(50), PRIMARY KEY(i_id)) {tail}"
        ),
    ]
}

/// The secondary indexes, created after the item table is loaded.
pub fn indexes(n: u32) -> Vec<String> {
    vec![
        format!("CREATE INDEX idx_customer{n} ON customer{n} (c_w_id,c_d_id,c_last,c_first)"),
        format!("CREATE INDEX idx_orders{n} ON orders{n} (o_w_id,o_d_id,o_c_id,o_id)"),
        format!("CREATE INDEX fkey_stock_2{n} ON stock{n} (s_i_id)"),
        format!("CREATE INDEX fkey_order_line_2{n} ON order_line{n} (ol_supply_w_id,ol_i_id)"),
        format!("CREATE INDEX fkey_history_1{n} ON history{n} (h_c_w_id,h_c_d_id,h_c_id)"),
        format!("CREATE INDEX fkey_history_2{n} ON history{n} (h_w_id,h_d_id )"),
    ]
}

/// `--use_fk=1`: the foreign keys (checks are off in every session the scripts open).
pub fn foreign_keys(n: u32) -> Vec<String> {
    let fk = |table: &str, name: &str, cols: &str, target: &str, tcols: &str| {
        format!(
            "ALTER TABLE {table}{n} ADD CONSTRAINT {name}_{n} FOREIGN KEY({cols}) REFERENCES {target}{n}({tcols})"
        )
    };
    vec![
        fk(
            "new_orders",
            "fkey_new_orders_1",
            "no_w_id,no_d_id,no_o_id",
            "orders",
            "o_w_id,o_d_id,o_id",
        ),
        fk(
            "orders",
            "fkey_orders_1",
            "o_w_id,o_d_id,o_c_id",
            "customer",
            "c_w_id,c_d_id,c_id",
        ),
        fk(
            "customer",
            "fkey_customer_1",
            "c_w_id,c_d_id",
            "district",
            "d_w_id,d_id",
        ),
        fk(
            "history",
            "fkey_history_1",
            "h_c_w_id,h_c_d_id,h_c_id",
            "customer",
            "c_w_id,c_d_id,c_id",
        ),
        fk(
            "history",
            "fkey_history_2",
            "h_w_id,h_d_id",
            "district",
            "d_w_id,d_id",
        ),
        fk("district", "fkey_district_1", "d_w_id", "warehouse", "w_id"),
        fk(
            "order_line",
            "fkey_order_line_1",
            "ol_w_id,ol_d_id,ol_o_id",
            "orders",
            "o_w_id,o_d_id,o_id",
        ),
        fk(
            "order_line",
            "fkey_order_line_2",
            "ol_supply_w_id,ol_i_id",
            "stock",
            "s_w_id,s_i_id",
        ),
        fk("stock", "fkey_stock_1", "s_w_id", "warehouse", "w_id"),
        fk("stock", "fkey_stock_2", "s_i_id", "item", "i_id"),
    ]
}

/// `cleanup`: the drops, in the scripts' order (children before parents).
pub fn drop_tables(n: u32) -> Vec<String> {
    [
        "history",
        "new_orders",
        "order_line",
        "orders",
        "customer",
        "district",
        "stock",
        "item",
        "warehouse",
    ]
    .iter()
    .map(|t| format!("DROP TABLE IF EXISTS {t}{n}"))
    .collect()
}
