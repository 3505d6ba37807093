//! `check`: sysbench-tpcc's consistency checks (`tpcc_check.lua`), the same queries and the same
//! PASSED/FAILED lines, per warehouse; the result is typed so that a caller can fail on it.

use crate::settings::Settings;
use crate::tables::{connect, ctx, Log, SchemaError};

/// The outcome of one numbered check on one warehouse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOutcome {
    pub warehouse: u32,
    /// The script's numbering (1–5, 7–10, 12: its 6 and 11 do not exist).
    pub check: u8,
    pub passed: bool,
}

/// Each check's query for table copy `t` and warehouse `w`, and how its rows must look.
fn checks(t: u32, w: u32) -> Vec<(u8, String, Expect)> {
    let sj = "STRAIGHT_JOIN";
    vec![
        (1, format!("SELECT d_w_id,sum(d_ytd)-max(w_ytd) diff FROM district{t},warehouse{t} WHERE d_w_id=w_id AND w_id={w} group by d_w_id"), Expect::Col1Zero),
        (2, format!("SELECT dis.d_id, d_next_o_id-1,mo,mno FROM district{t} dis, (SELECT o_d_id,max(o_id) mo FROM orders{t} WHERE o_w_id={w} GROUP BY o_d_id) q, (select no_d_id,max(no_o_id) mno from new_orders{t} where no_w_id={w} group by no_d_id) no where d_w_id={w} and q.o_d_id=dis.d_id and no.no_d_id=dis.d_id"), Expect::Cols123Equal),
        (3, format!("select no_d_id,max(no_o_id)-min(no_o_id)+1,count(*) from new_orders{t} where no_w_id={w} group by no_d_id"), Expect::Cols12Equal),
        (4, format!("SELECT count(*) FROM (SELECT o_d_id, SUM(o_ol_cnt) sm1, MAX(cn) as cn FROM orders{t},(SELECT ol_d_id, COUNT(*) cn FROM order_line{t} WHERE ol_w_id={w} GROUP BY ol_d_id) ol WHERE o_w_id={w} AND ol_d_id=o_d_id GROUP BY o_d_id) t1 WHERE sm1<>cn"), Expect::Col0Zero),
        (5, format!("SELECT count(*) FROM orders{t} LEFT JOIN new_orders{t} ON (no_w_id=o_w_id AND o_d_id=no_d_id AND o_id=no_o_id) where o_w_id={w} and ((o_carrier_id IS NULL and no_o_id IS  NULL) OR (o_carrier_id IS NOT NULL and no_o_id IS NOT NULL  )) "), Expect::Col0Zero),
        (7, format!("SELECT count(*) FROM orders{t}, order_line{t} WHERE o_id=ol_o_id AND o_d_id=ol_d_id AND ol_w_id=o_w_id AND o_w_id={w} AND ((ol_delivery_d IS NULL and o_carrier_id IS NOT NULL) or (o_carrier_id IS NULL and ol_delivery_d IS NOT NULL ))"), Expect::Col0Zero),
        (8, format!("SELECT count(*) cn FROM (SELECT w_id,w_ytd,SUM(h_amount) sm FROM history{t},warehouse{t} WHERE h_w_id=w_id and w_id={w} GROUP BY w_id) t1 WHERE w_ytd<>sm"), Expect::Col0Zero),
        (9, format!("SELECT COUNT(*) FROM (select d_id,d_w_id,sum(d_ytd) s1 from district{t} group by d_id,d_w_id) d,(select h_d_id,h_w_id,sum(h_amount) s2 from history{t} WHERE  h_w_id={w} group by h_d_id, h_w_id) h WHERE h_d_id=d_id AND d_w_id=h_w_id and d_w_id={w} and s1<>s2"), Expect::Col0Zero),
        (10, format!("SELECT count(*) FROM ( SELECT c.c_id, c.c_d_id, c.c_w_id, c.c_balance c1, (SELECT sum(ol_amount) FROM orders{t} {sj} order_line{t} WHERE OL_W_ID=O_W_ID AND OL_D_ID = O_D_ID AND OL_O_ID = O_ID AND OL_DELIVERY_D IS NOT NULL AND O_W_ID=c.c_w_id AND O_D_ID=c.C_D_ID AND O_C_ID=c.C_ID) sm, (SELECT sum(h_amount) from history{t} WHERE H_C_W_ID=c.C_W_ID AND H_C_D_ID=c.C_D_ID AND H_C_ID=c.C_ID) smh FROM customer{t} c WHERE c.c_w_id={w} ) t WHERE c1<>sm-smh"), Expect::Col0Zero),
        (12, format!("SELECT count(*) FROM (SELECT c.c_id, c.c_d_id, c.c_balance c1, c_ytd_payment, (SELECT sum(ol_amount) FROM orders{t} {sj} order_line{t} WHERE OL_W_ID=O_W_ID AND OL_D_ID = O_D_ID AND OL_O_ID = O_ID AND OL_DELIVERY_D IS NOT NULL AND O_W_ID=c.c_w_id AND O_D_ID=c.C_D_ID AND O_C_ID=c.C_ID) sm FROM customer{t} c WHERE c.c_w_id={w}) t1 WHERE c1+c_ytd_payment <> sm "), Expect::Col0Zero),
    ]
}

#[derive(Clone, Copy)]
enum Expect {
    Col0Zero,
    Col1Zero,
    Cols12Equal,
    Cols123Equal,
}

fn n(row: &[Option<String>], i: usize) -> Option<f64> {
    row.get(i)?.as_deref()?.trim().parse().ok()
}

impl Expect {
    /// Whether a row passes, as the script compares (`tonumber`, so "0.00" is 0; a NULL compares
    /// unequal to any number).
    fn row_ok(self, row: &[Option<String>]) -> bool {
        match self {
            Expect::Col0Zero => n(row, 0) == Some(0.0),
            Expect::Col1Zero => n(row, 1) == Some(0.0),
            Expect::Cols12Equal => n(row, 1).is_some() && n(row, 1) == n(row, 2),
            Expect::Cols123Equal => {
                n(row, 1).is_some() && n(row, 1) == n(row, 2) && n(row, 1) == n(row, 3)
            }
        }
    }
}

/// Runs every check for every warehouse (over all table copies), printing the script's lines.
pub fn check(s: &Settings, log: Log) -> Result<Vec<CheckOutcome>, SchemaError> {
    let mut conn = connect(s, 0)?;
    let mut out = Vec::new();
    for w in 1..=s.tpcc.scale {
        let mut by_check: Vec<(u8, bool)> = Vec::new();
        for t in 1..=s.schema.tables {
            for (i, (num, sql, expect)) in checks(t, w).into_iter().enumerate() {
                let rows = conn
                    .query_rows(&sql)
                    .map_err(ctx(format!("check {num}, warehouse {w}, table copy {t}")))?;
                let ok = rows.iter().all(|r| expect.row_ok(r));
                if t == 1 {
                    by_check.push((num, ok));
                } else {
                    by_check[i].1 &= ok;
                }
            }
        }
        for (num, passed) in by_check {
            log(&format!(
                "Check {num}, warehouse: {w} {}",
                if passed { "PASSED" } else { "FAILED!!!" }
            ));
            out.push(CheckOutcome {
                warehouse: w,
                check: num,
                passed,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_compare_as_numbers() {
        let row = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
        assert!(Expect::Col1Zero.row_ok(&row(&["1", "0.00"])));
        assert!(!Expect::Col1Zero.row_ok(&row(&["1", "0.01"])));
        assert!(Expect::Cols123Equal.row_ok(&row(&["1", "3000", "3000", "3000"])));
        assert!(!Expect::Cols123Equal.row_ok(&row(&["1", "3000", "3000", "2999"])));
        assert!(!Expect::Col0Zero.row_ok(&[None]));
        assert_eq!(checks(1, 1).len(), 10);
    }
}
