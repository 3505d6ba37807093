//! Drawing one transaction: its type from the mix and every random value it uses, in the order
//! `tpcc.lua`'s `event()` and `tpcc_run.lua`'s "prep work" draw them. What the transaction then
//! reads from the server is [`super::exec`]'s business.

use super::*;
use crate::settings::Settings;

/// sysbench-tpcc's transaction types, with the 10/10/1/1/1-of-23 mix (24 with purge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnKind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
    Purge,
}

impl TxnKind {
    pub const ALL: [TxnKind; 6] = [
        TxnKind::NewOrder,
        TxnKind::Payment,
        TxnKind::OrderStatus,
        TxnKind::Delivery,
        TxnKind::StockLevel,
        TxnKind::Purge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TxnKind::NewOrder => "new_order",
            TxnKind::Payment => "payment",
            TxnKind::OrderStatus => "orderstatus",
            TxnKind::Delivery => "delivery",
            TxnKind::StockLevel => "stocklevel",
            TxnKind::Purge => "purge",
        }
    }
}

/// One order line of a new order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    /// The item; 0 (no such item) for the 1 % of orders the standard makes roll back.
    pub item: u32,
    pub supply_w: u32,
    pub qty: u32,
}

/// How payment and order-status find their customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Customer {
    ById(u32),
    /// 60 %: by last name, taking the middle one of those ordered by first name.
    ByName(String),
}

/// One purge round: the district whose oldest undelivered orders bound the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PurgeRound {
    pub table: u32,
    pub w: u32,
    pub d: u32,
}

/// A transaction with all of its draws made.
#[derive(Clone, Debug, PartialEq)]
pub enum Txn {
    NewOrder {
        table: u32,
        w: u32,
        d: u32,
        c: u32,
        lines: Vec<Line>,
        all_local: bool,
    },
    Payment {
        table: u32,
        w: u32,
        d: u32,
        /// The customer's warehouse and district (the home ones 85 % of the time).
        c_w: u32,
        c_d: u32,
        customer: Customer,
        amount: u32,
    },
    OrderStatus {
        table: u32,
        w: u32,
        d: u32,
        customer: Customer,
    },
    Delivery {
        table: u32,
        w: u32,
        carrier: u32,
    },
    StockLevel {
        table: u32,
        w: u32,
        d: u32,
        threshold: u32,
    },
    Purge(Vec<PurgeRound>),
}

impl Txn {
    pub fn kind(&self) -> TxnKind {
        match self {
            Txn::NewOrder { .. } => TxnKind::NewOrder,
            Txn::Payment { .. } => TxnKind::Payment,
            Txn::OrderStatus { .. } => TxnKind::OrderStatus,
            Txn::Delivery { .. } => TxnKind::Delivery,
            Txn::StockLevel { .. } => TxnKind::StockLevel,
            Txn::Purge(_) => TxnKind::Purge,
        }
    }
}

/// The script's `other_ware`: meant to pick a warehouse other than the home one, but its loop
/// runs until it draws the home one, so it always returns it (after a number of draws).
fn other_ware(rng: &mut SbRng, scale: u32, home: u32) -> u32 {
    if scale == 1 {
        return home;
    }
    loop {
        if rng.uniform(1, scale) == home {
            return home;
        }
    }
}

/// The table copy, warehouse, district and customer id every transaction but delivery starts with.
fn home(rng: &mut SbRng, tables: u32, scale: u32) -> (u32, u32, u32, u32) {
    let table = rng.uniform(1, tables);
    let w = rng.uniform(1, scale);
    let d = rng.uniform(1, DIST_PER_WARE);
    let c = nurand(rng, 1023, 1, CUST_PER_DIST);
    (table, w, d, c)
}

/// Payment's and order-status's customer: a last name is drawn either way, then 60 % use it.
fn customer(rng: &mut SbRng, id: u32) -> Customer {
    let last = last_name(nurand(rng, 255, 0, 999));
    if rng.uniform(1, 100) <= 60 {
        Customer::ByName(last)
    } else {
        Customer::ById(id)
    }
}

/// Draws the next transaction of a connection.
pub fn draw(s: &Settings, rng: &mut SbRng) -> Txn {
    let o = &s.tpcc;
    let max = if o.enable_purge { 24 } else { 23 };
    let kind = match rng.uniform(1, max) {
        1..=10 => TxnKind::NewOrder,
        11..=20 => TxnKind::Payment,
        21 => TxnKind::OrderStatus,
        22 => TxnKind::Delivery,
        23 => TxnKind::StockLevel,
        _ => TxnKind::Purge,
    };
    draw_kind(s, rng, kind)
}

/// Draws the values of a transaction of the given type.
pub fn draw_kind(s: &Settings, rng: &mut SbRng, kind: TxnKind) -> Txn {
    let scale = s.tpcc.scale;
    let tables = s.schema.tables;
    match kind {
        TxnKind::NewOrder => {
            let (table, w, d, c) = home(rng, tables, scale);
            let count = rng.uniform(5, 15);
            let rollback = rng.uniform(1, 100) == 1;
            let mut all_local = true;
            let lines = (1..=count)
                .map(|i| {
                    let mut item = nurand(rng, 8191, 1, MAXITEMS);
                    if rollback && i == count - 1 {
                        // The script's -1: an item id no row has.
                        item = 0;
                    }
                    let supply_w = if rng.uniform(1, 100) != 1 {
                        w
                    } else {
                        all_local = false;
                        other_ware(rng, scale, w)
                    };
                    let qty = rng.uniform(1, 10);
                    Line {
                        item,
                        supply_w,
                        qty,
                    }
                })
                .collect();
            Txn::NewOrder {
                table,
                w,
                d,
                c,
                lines,
                all_local,
            }
        }
        TxnKind::Payment => {
            let (table, w, d, c) = home(rng, tables, scale);
            let amount = rng.uniform(1, 5000);
            let customer = customer(rng, c);
            let (c_w, c_d) = if rng.uniform(1, 100) <= 85 {
                (w, d)
            } else {
                (other_ware(rng, scale, w), rng.uniform(1, DIST_PER_WARE))
            };
            Txn::Payment {
                table,
                w,
                d,
                c_w,
                c_d,
                customer,
                amount,
            }
        }
        TxnKind::OrderStatus => {
            let (table, w, d, c) = home(rng, tables, scale);
            Txn::OrderStatus {
                table,
                w,
                d,
                customer: customer(rng, c),
            }
        }
        TxnKind::Delivery => Txn::Delivery {
            table: rng.uniform(1, tables),
            w: rng.uniform(1, scale),
            carrier: rng.uniform(1, 10),
        },
        TxnKind::StockLevel => Txn::StockLevel {
            table: rng.uniform(1, tables),
            w: rng.uniform(1, scale),
            d: rng.uniform(1, DIST_PER_WARE),
            threshold: rng.uniform(10, 20),
        },
        TxnKind::Purge => Txn::Purge(
            (0..10)
                .map(|_| PurgeRound {
                    table: rng.uniform(1, tables),
                    w: rng.uniform(1, scale),
                    d: rng.uniform(1, DIST_PER_WARE),
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::TestName;

    fn settings(scale: u32, purge: bool) -> Settings {
        let mut s = Settings::new(TestName::Tpcc);
        s.tpcc.scale = scale;
        s.tpcc.enable_purge = purge;
        s
    }

    #[test]
    fn the_mix_is_ten_ten_one_one_one_of_twenty_three() {
        let s = settings(4, false);
        let mut rng = SbRng::new(3, 1);
        let n = 230_000;
        let mut counts = std::collections::HashMap::new();
        for _ in 0..n {
            *counts.entry(draw(&s, &mut rng).kind()).or_insert(0u32) += 1;
        }
        let share = |k| counts.get(&k).copied().unwrap_or(0) as f64 / n as f64;
        for (k, want) in [
            (TxnKind::NewOrder, 10.0 / 23.0),
            (TxnKind::Payment, 10.0 / 23.0),
            (TxnKind::OrderStatus, 1.0 / 23.0),
            (TxnKind::Delivery, 1.0 / 23.0),
            (TxnKind::StockLevel, 1.0 / 23.0),
        ] {
            assert!((share(k) - want).abs() < 0.005, "{k:?}: {}", share(k));
        }
        assert_eq!(share(TxnKind::Purge), 0.0);
        let s = settings(4, true);
        let purges = (0..24_000)
            .filter(|_| draw(&s, &mut rng).kind() == TxnKind::Purge)
            .count();
        assert!((800..1200).contains(&purges), "{purges}");
    }

    #[test]
    fn the_scripts_quirks_are_kept() {
        // "Remote" warehouses are always the home one, whatever the scale.
        let s = settings(8, false);
        let mut rng = SbRng::new(5, 2);
        let mut rollbacks = 0;
        let mut orders = 0;
        for _ in 0..20_000 {
            match draw(&s, &mut rng) {
                Txn::NewOrder { w, lines, .. } => {
                    orders += 1;
                    assert!(lines.iter().all(|l| l.supply_w == w));
                    assert!((5..=15).contains(&lines.len()));
                    if let Some(pos) = lines.iter().position(|l| l.item == 0) {
                        rollbacks += 1;
                        assert_eq!(
                            pos,
                            lines.len() - 2,
                            "the invalid item is the one before last"
                        );
                    }
                }
                Txn::Payment { w, c_w, .. } => assert_eq!(w, c_w),
                _ => {}
            }
        }
        let share = rollbacks as f64 / orders as f64;
        assert!((0.005..0.015).contains(&share), "{share}");
    }
}
