//! What the machine has for a run (BOLT, a build cluster), found once before planning so that
//! [`super::RunPlan::resolve`] stays pure.

use crate::builder::cluster::ClusterState;
use crate::toolchain::Bolt;

/// What the machine has, found before planning.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub bolt: Option<Bolt>,
    /// A build cluster (sccache-dist), as the machine's sccache configuration names it.
    pub cluster: ClusterState,
}

impl Env {
    pub fn probe() -> Env {
        Env {
            bolt: Bolt::find(),
            cluster: crate::builder::cluster::probe(),
        }
    }
}
