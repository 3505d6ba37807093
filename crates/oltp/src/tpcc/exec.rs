//! Running a drawn transaction: `tpcc_run.lua`'s statements, in its order, with the values later
//! statements take from the rows earlier ones returned.
//!
//! The SQL is the script's, whitespace collapsed to single spaces. Numbers are rendered as the
//! script's `string.format` renders them (`%d` truncates toward zero, `%f` prints six decimals),
//! so the server parses the same literals. Strings read back from the server are escaped before
//! they go into a later statement (the script does not escape; with its own data nothing differs).

use std::fmt::Write;

use super::txn::{Customer, Line, PurgeRound, Txn};
use crate::script::{Cx, Flow, StmtReply};

fn num(r: &StmtReply, col: usize) -> f64 {
    r.value(col)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Lua's `%d` of a number: truncated toward zero.
fn d(v: f64) -> i64 {
    v.trunc() as i64
}

fn escaped(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        if c == '\'' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

async fn begin(cx: &Cx, splittable: bool, read_only: bool) {
    let sql = match (splittable, read_only) {
        (false, _) => "BEGIN",
        (true, false) => "START TRANSACTION READ WRITE",
        (true, true) => "START TRANSACTION READ ONLY",
    };
    cx.query(sql).await;
}

/// sysbench-tpcc's `before_restart_event` hook: after an ignorable error, roll back and start the
/// event again.
pub async fn rollback_and_restart(cx: Cx) -> Flow {
    cx.query("ROLLBACK").await;
    Flow::Restart
}

/// Runs one transaction to its end.
pub async fn run(txn: Txn, cx: Cx, splittable: bool) -> Flow {
    match txn {
        Txn::NewOrder {
            table,
            w,
            d,
            c,
            lines,
            all_local,
        } => new_order(&cx, splittable, table, w, d, c, &lines, all_local).await,
        Txn::Payment {
            table,
            w,
            d,
            c_w,
            c_d,
            customer,
            amount,
        } => payment(&cx, splittable, table, (w, d), (c_w, c_d), customer, amount).await,
        Txn::OrderStatus {
            table,
            w,
            d,
            customer,
        } => order_status(&cx, splittable, table, w, d, customer).await,
        Txn::Delivery { table, w, carrier } => delivery(&cx, splittable, table, w, carrier).await,
        Txn::StockLevel {
            table,
            w,
            d,
            threshold,
        } => stock_level(&cx, splittable, table, w, d, threshold).await,
        Txn::Purge(rounds) => purge(&cx, splittable, &rounds).await,
    }
    Flow::Done
}

#[allow(clippy::too_many_arguments)]
async fn new_order(
    cx: &Cx,
    split: bool,
    t: u32,
    w: u32,
    dist: u32,
    c: u32,
    lines: &[Line],
    all_local: bool,
) {
    begin(cx, split, false).await;
    let r = cx
        .query(format!(
            "SELECT c_discount, c_last, c_credit, w_tax FROM customer{t}, warehouse{t} \
             WHERE w_id = {w} AND c_w_id = w_id AND c_d_id = {dist} AND c_id = {c}"
        ))
        .await;
    let (c_discount, w_tax) = (num(&r, 0), num(&r, 3));
    let r = cx
        .query(format!(
            "SELECT d_next_o_id, d_tax FROM district{t} WHERE d_w_id = {w} AND d_id = {dist} FOR UPDATE"
        ))
        .await;
    let (o_id, d_tax) = (d(num(&r, 0)), num(&r, 1));
    cx.query(format!(
        "UPDATE district{t} SET d_next_o_id = {} WHERE d_id = {dist} AND d_w_id= {w}",
        o_id + 1
    ))
    .await;
    cx.query(format!(
        "INSERT INTO orders{t} (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) \
         VALUES ({o_id},{dist},{w},{c},NOW(),{},{})",
        lines.len(),
        all_local as u8
    ))
    .await;
    cx.query(format!(
        "INSERT INTO new_orders{t} (no_o_id, no_d_id, no_w_id) VALUES ({o_id},{dist},{w})"
    ))
    .await;
    for (i, line) in lines.iter().enumerate() {
        let item = if line.item == 0 {
            "-1".to_string()
        } else {
            line.item.to_string()
        };
        let r = cx
            .query(format!(
                "SELECT i_price, i_name, i_data FROM item{t} WHERE i_id = {item}"
            ))
            .await;
        if r.rows.is_empty() {
            // The standard's 1 % of orders with an unknown item: counted as an error, rolled
            // back, and the event is over.
            cx.count_error();
            cx.query("ROLLBACK").await;
            return;
        }
        let price = num(&r, 0);
        let r = cx
            .query(format!(
                "SELECT s_quantity, s_data, s_dist_{dist:02} s_dist FROM stock{t} \
                 WHERE s_i_id = {item} AND s_w_id= {} FOR UPDATE",
                line.supply_w
            ))
            .await;
        let mut qty = d(num(&r, 0));
        let dist_info = escaped(r.value(2).unwrap_or(""));
        let ordered = line.qty as i64;
        qty = if qty > ordered {
            qty - ordered
        } else {
            qty - ordered + 91
        };
        cx.query(format!(
            "UPDATE stock{t} SET s_quantity = {qty} WHERE s_i_id = {item} AND s_w_id= {}",
            line.supply_w
        ))
        .await;
        let amount = line.qty as f64 * price * (1.0 + w_tax + d_tax) * (1.0 - c_discount);
        cx.query(format!(
            "INSERT INTO order_line{t} (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
             ol_quantity, ol_amount, ol_dist_info) VALUES ({o_id},{dist},{w},{},{item},{},{},{},'{dist_info}')",
            i + 1,
            line.supply_w,
            line.qty,
            d(amount)
        ))
        .await;
    }
    cx.query("COMMIT").await;
}

/// The customer id at the middle of a by-name lookup, as the scripts pick it: with n matches
/// (n made even when odd and above 1), the row at index n/2.
fn middle(count: i64, rows: usize) -> Option<usize> {
    let mut n = count.max(0);
    if n > 1 && n % 2 == 1 {
        n += 1;
    }
    let idx = (n / 2) as usize;
    (rows > 0).then(|| idx.min(rows - 1))
}

/// Payment's and order-status's customer by last name: how many share it, then those customers
/// (`columns`, the id at `id_col`) ordered by first name, and the middle one ([`middle`]).
async fn by_name(
    cx: &Cx,
    t: u32,
    w: u32,
    dist: u32,
    last: &str,
    columns: &str,
    id_col: usize,
) -> i64 {
    let r = cx
        .query(format!(
            "SELECT count(c_id) namecnt FROM customer{t} WHERE c_w_id = {w} AND c_d_id= {dist} AND c_last='{last}'"
        ))
        .await;
    let count = d(num(&r, 0));
    let r = cx
        .query(format!(
            "SELECT {columns} FROM customer{t} WHERE c_w_id = {w} AND c_d_id= {dist} AND c_last='{last}' ORDER BY c_first"
        ))
        .await;
    middle(count, r.rows.len())
        .and_then(|i| r.rows[i].get(id_col).cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

async fn payment(
    cx: &Cx,
    split: bool,
    t: u32,
    (w, dist): (u32, u32),
    (c_w, c_d): (u32, u32),
    customer: Customer,
    amount: u32,
) {
    begin(cx, split, false).await;
    cx.query(format!(
        "UPDATE warehouse{t} SET w_ytd = w_ytd + {amount} WHERE w_id = {w}"
    ))
    .await;
    let r = cx
        .query(format!(
            "SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse{t} WHERE w_id = {w}"
        ))
        .await;
    let w_name = r.value(5).unwrap_or("").to_string();
    cx.query(format!(
        "UPDATE district{t} SET d_ytd = d_ytd + {amount} WHERE d_w_id = {w} AND d_id= {dist}"
    ))
    .await;
    let r = cx
        .query(format!(
            "SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district{t} \
             WHERE d_w_id = {w} AND d_id = {dist}"
        ))
        .await;
    let d_name = r.value(5).unwrap_or("").to_string();
    let c_id: i64 = match customer {
        Customer::ById(c) => c as i64,
        Customer::ByName(last) => by_name(cx, t, c_w, c_d, &last, "c_id", 0).await,
    };
    let r = cx
        .query(format!(
            "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, \
             c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_since FROM customer{t} \
             WHERE c_w_id = {c_w} AND c_d_id= {c_d} AND c_id={c_id} FOR UPDATE"
        ))
        .await;
    let credit = r.value(9).unwrap_or("").to_string();
    let balance = num(&r, 12) - amount as f64;
    let ytd = num(&r, 13) + amount as f64;
    if credit == "BC" {
        let r = cx
            .query(format!(
                "SELECT c_data FROM customer{t} WHERE c_w_id = {c_w} AND c_d_id={c_d} AND c_id= {c_id}"
            ))
            .await;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_secs());
        let mut data = String::new();
        let _ = write!(
            data,
            "| {c_id:4} {c_d:2} {c_w:4} {dist:2} {w:4} ${:7.2} {now:>12} {:>24}",
            amount as f64,
            r.value(0).unwrap_or("")
        );
        let cut: String = data.chars().take(500).collect();
        cx.query(format!(
            "UPDATE customer{t} SET c_balance={balance:.6}, c_ytd_payment={ytd:.6}, c_data='{}' \
             WHERE c_w_id = {c_w} AND c_d_id={c_d} AND c_id={c_id}",
            escaped(&cut)
        ))
        .await;
    } else {
        cx.query(format!(
            "UPDATE customer{t} SET c_balance={balance:.6}, c_ytd_payment={ytd:.6} \
             WHERE c_w_id = {c_w} AND c_d_id={c_d} AND c_id={c_id}"
        ))
        .await;
    }
    let h_data = format!("{w_name:>10} {d_name:>10}   ");
    cx.query(format!(
        "INSERT INTO history{t} (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         VALUES ({c_d},{c_w},{c_id},{dist},{w},NOW(),{amount},'{}')",
        escaped(&h_data)
    ))
    .await;
    cx.query("COMMIT").await;
}

async fn order_status(cx: &Cx, split: bool, t: u32, w: u32, dist: u32, customer: Customer) {
    begin(cx, split, true).await;
    let c_id: i64 = match customer {
        Customer::ByName(last) => {
            by_name(
                cx,
                t,
                w,
                dist,
                &last,
                "c_balance, c_first, c_middle, c_id",
                3,
            )
            .await
        }
        Customer::ById(c) => {
            cx.query(format!(
                "SELECT c_balance, c_first, c_middle, c_last FROM customer{t} WHERE c_w_id = {w} \
                 AND c_d_id={dist} AND c_id={c}"
            ))
            .await;
            c as i64
        }
    };
    cx.query(format!(
        "SELECT o_id, o_carrier_id, o_entry_d FROM orders{t} WHERE o_w_id = {w} AND o_d_id = {dist} \
         AND o_c_id = {c_id} ORDER BY o_id DESC"
    ))
    .await;
    // The script's format string takes d_id where the order id belongs (five values for four
    // `%d`s), so it reads the lines of order number d_id: reproduced.
    cx.query(format!(
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line{t} \
         WHERE ol_w_id = {w} AND ol_d_id = {dist} AND ol_o_id = {dist}"
    ))
    .await;
    cx.query("COMMIT").await;
}

async fn delivery(cx: &Cx, split: bool, t: u32, w: u32, carrier: u32) {
    begin(cx, split, false).await;
    for dist in 1..=super::DIST_PER_WARE {
        let r = cx
            .query(format!(
                "SELECT no_o_id FROM new_orders{t} WHERE no_d_id = {dist} AND no_w_id = {w} \
                 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE"
            ))
            .await;
        let Some(no) = r.value(0).and_then(|v| v.parse::<i64>().ok()) else {
            continue;
        };
        cx.query(format!(
            "DELETE FROM new_orders{t} WHERE no_o_id = {no} AND no_d_id = {dist} AND no_w_id = {w}"
        ))
        .await;
        let r = cx
            .query(format!(
                "SELECT o_c_id FROM orders{t} WHERE o_id = {no} AND o_d_id = {dist} AND o_w_id = {w}"
            ))
            .await;
        let c = d(num(&r, 0));
        cx.query(format!(
            "UPDATE orders{t} SET o_carrier_id = {carrier} WHERE o_id = {no} AND o_d_id = {dist} AND o_w_id = {w}"
        ))
        .await;
        cx.query(format!(
            "UPDATE order_line{t} SET ol_delivery_d = NOW() WHERE ol_o_id = {no} AND ol_d_id = {dist} AND ol_w_id = {w}"
        ))
        .await;
        let r = cx
            .query(format!(
                "SELECT SUM(ol_amount) sm FROM order_line{t} WHERE ol_o_id = {no} AND ol_d_id = {dist} AND ol_w_id = {w}"
            ))
            .await;
        let sum = num(&r, 0);
        cx.query(format!(
            "UPDATE customer{t} SET c_balance = c_balance + {sum:.6}, c_delivery_cnt = c_delivery_cnt + 1 \
             WHERE c_id = {c} AND c_d_id = {dist} AND c_w_id = {w}"
        ))
        .await;
    }
    cx.query("COMMIT").await;
}

async fn stock_level(cx: &Cx, split: bool, t: u32, w: u32, dist: u32, threshold: u32) {
    begin(cx, split, true).await;
    let r = cx
        .query(format!(
            "SELECT d_next_o_id FROM district{t} WHERE d_id = {dist} AND d_w_id= {w}"
        ))
        .await;
    let next = d(num(&r, 0));
    cx.query(format!(
        "SELECT COUNT(DISTINCT (s_i_id)) FROM order_line{t}, stock{t} WHERE ol_w_id = {w} \
         AND ol_d_id = {dist} AND ol_o_id < {next} AND ol_o_id >= {} AND s_w_id= {w} \
         AND s_i_id=ol_i_id AND s_quantity < {threshold}",
        next - 20
    ))
    .await;
    cx.query("COMMIT").await;
}

async fn purge(cx: &Cx, split: bool, rounds: &[PurgeRound]) {
    for &PurgeRound {
        table: t,
        w,
        d: dist,
    } in rounds
    {
        begin(cx, split, false).await;
        let r = cx
            .query(format!(
                "SELECT min(no_o_id) mo FROM new_orders{t} WHERE no_w_id = {w} AND no_d_id = {dist}"
            ))
            .await;
        if let Some(min) = r.value(0).and_then(|v| v.parse::<i64>().ok()) {
            let r = cx
                .query(format!(
                    "SELECT o_id FROM orders{t} o, (SELECT o_c_id,o_w_id,o_d_id,count(distinct o_id) \
                     FROM orders{t} WHERE o_w_id={w} AND o_d_id={dist} AND o_id > 2100 AND o_id < {min} \
                     GROUP BY o_c_id,o_d_id,o_w_id having count( distinct o_id) > 1 limit 1) t \
                     WHERE t.o_w_id=o.o_w_id and t.o_d_id=o.o_d_id and t.o_c_id=o.o_c_id limit 1"
                ))
                .await;
            if let Some(o) = r.value(0).and_then(|v| v.parse::<i64>().ok()) {
                cx.query(format!(
                    "DELETE FROM order_line{t} where ol_w_id={w} AND ol_d_id={dist} AND ol_o_id={o}"
                ))
                .await;
                cx.query(format!(
                    "DELETE FROM orders{t} where o_w_id={w} AND o_d_id={dist} and o_id={o}"
                ))
                .await;
                cx.query(format!(
                    "DELETE FROM history{t} where h_w_id={w} AND h_d_id={dist} LIMIT 10"
                ))
                .await;
            }
        }
        cx.query("COMMIT").await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_middle_customer_is_picked_as_the_scripts_pick_it() {
        // n = 1: the only row; n = 2: the second; n = 3 (made 4): the third; n = 4: the third.
        assert_eq!(middle(1, 1), Some(0));
        assert_eq!(middle(2, 2), Some(1));
        assert_eq!(middle(3, 3), Some(2));
        assert_eq!(middle(4, 4), Some(2));
        assert_eq!(middle(0, 0), None);
        assert_eq!(middle(9, 3), Some(2));
    }

    #[test]
    fn numbers_render_as_luas_format_does() {
        assert_eq!(d(12.99), 12);
        assert_eq!(d(-3.7), -3);
        assert_eq!(escaped("it's"), "it\\'s");
    }
}
