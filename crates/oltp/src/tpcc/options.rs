//! sysbench-tpcc's own options (`tpcc_common.lua`'s `sysbench.cmdline.options`), with its defaults.
//! `--tables` and `--mysql_storage_engine` are the OLTP tests' [`crate::settings::Schema`] fields.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `--trx_level`: the session isolation level every connection sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum IsolationLevel {
    #[default]
    RR,
    RC,
    SER,
}

impl IsolationLevel {
    /// The value MySQL's `transaction_isolation` (MariaDB 10.11: `tx_isolation`) takes.
    pub fn mysql_value(self) -> &'static str {
        match self {
            IsolationLevel::RR => "REPEATABLE-READ",
            IsolationLevel::RC => "READ-COMMITTED",
            IsolationLevel::SER => "SERIALIZABLE",
        }
    }
}

impl fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IsolationLevel::RR => "RR",
            IsolationLevel::RC => "RC",
            IsolationLevel::SER => "SER",
        })
    }
}

impl FromStr for IsolationLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "RR" => Ok(IsolationLevel::RR),
            "RC" => Ok(IsolationLevel::RC),
            "SER" => Ok(IsolationLevel::SER),
            _ => Err(format!(
                "'{s}' is not an isolation level: use RR, RC or SER (as sysbench-tpcc)"
            )),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TpccOptions {
    /// `--scale`: warehouses per table copy.
    pub scale: u32,
    /// `--use_fk`: add the foreign keys after the load.
    pub use_fk: bool,
    /// `--force_pk`: give `history` an auto-increment primary key.
    pub force_pk: bool,
    pub trx_level: IsolationLevel,
    /// `--enable_purge`: a sixth transaction (1 in 24) deleting delivered orders.
    pub enable_purge: bool,
    /// `--mysql_table_options`: appended to every CREATE TABLE.
    pub table_options: String,
    /// `--splittable`: `START TRANSACTION READ WRITE|READ ONLY` instead of `BEGIN`.
    pub splittable: bool,
}

impl Default for TpccOptions {
    /// sysbench-tpcc's defaults (its scale of 100 warehouses is about 10 GB per table copy).
    fn default() -> Self {
        TpccOptions {
            scale: 100,
            use_fk: true,
            force_pk: false,
            trx_level: IsolationLevel::RR,
            enable_purge: false,
            table_options: String::new(),
            splittable: false,
        }
    }
}

impl TpccOptions {
    pub fn is_default(&self) -> bool {
        *self == TpccOptions::default()
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.scale == 0 {
            return Err("--scale must be at least 1 warehouse".into());
        }
        if self.scale > i16::MAX as u32 {
            // w_id is a SMALLINT in sysbench-tpcc's schema.
            return Err(format!(
                "--scale={} does not fit the schema's SMALLINT warehouse id (at most {})",
                self.scale,
                i16::MAX
            ));
        }
        if self.table_options.contains(';') || self.table_options.contains('\0') {
            return Err(
                "--mysql_table_options must be table options (e.g. 'COLLATE latin1_bin'), not \
                 further statements: remove the ';'"
                    .into(),
            );
        }
        Ok(())
    }
}
