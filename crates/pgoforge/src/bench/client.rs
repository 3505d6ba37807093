//! Who drives the workload: this process (the default), or pgoforge on a client host of its own
//! ([`super::remote`]). The benchmark asks the one it has for the settings of each server, the
//! round trip and each run, and never needs to know which it is.

use std::cell::RefCell;

use anyhow::{Context, Result};
use oltp::settings::{ConnSettings, Settings};
use oltp::RunResult;

use super::network::Transport;
use super::remote::{ClientHost, Remote};
use super::spec::BenchSpec;
use crate::server::{Server, ServerSpec};

pub enum Client {
    Local {
        transport: Transport,
    },
    /// One ssh session for the whole benchmark; runs are asked for one at a time.
    Remote(RefCell<Remote>),
}

impl Client {
    /// The client the spec asks for; a remote one is reached and started now, before any server.
    pub fn open(spec: &BenchSpec, log: &dyn Fn(&str)) -> Result<Client> {
        match &spec.client_host {
            None => Ok(Client::Local {
                transport: spec.transport,
            }),
            Some(host) => Ok(Client::Remote(RefCell::new(open_remote(host, log)?))),
        }
    }

    /// What a server needs to be reachable by this client (an address besides 127.0.0.1).
    pub fn server_spec(&self, mut spec: ServerSpec) -> ServerSpec {
        if let Client::Remote(r) = self {
            spec.also_listen = Some(r.borrow().server_addr);
        }
        spec
    }

    /// Readies a started server for this client (the benchmark user let in from its address).
    pub fn admit(&self, srv: &Server) -> Result<()> {
        match self {
            Client::Local { .. } => Ok(()),
            Client::Remote(r) => srv.allow_client(r.borrow().client_addr),
        }
    }

    /// How this client reaches `srv`.
    pub fn conn(&self, srv: &Server) -> ConnSettings {
        match self {
            Client::Local {
                transport: Transport::Socket,
            } => srv.state.conn_settings(),
            Client::Local {
                transport: Transport::Tcp,
            } => srv.state.tcp_settings(),
            Client::Remote(r) => srv.remote_settings(r.borrow().server_addr),
        }
    }

    /// The round trip from this client to `conn`'s server (None: not measurable; a lost client
    /// host is an error).
    pub fn round_trip_us(&self, conn: &ConnSettings) -> Result<Option<f64>> {
        match self {
            Client::Local { .. } => Ok(super::network::round_trip_us(conn)),
            Client::Remote(r) => r.borrow_mut().round_trip_us(conn),
        }
    }

    /// One run of `s`.
    pub fn run(&self, s: &Settings) -> Result<RunResult> {
        match self {
            Client::Local { .. } => oltp::run(s, &mut oltp::Quiet).map_err(anyhow::Error::new),
            Client::Remote(r) => r.borrow_mut().run(s),
        }
    }

    /// Where the runs came from, for each record: None for this host.
    pub fn origin(&self) -> Option<String> {
        match self {
            Client::Local { .. } => None,
            Client::Remote(r) => {
                let r = r.borrow();
                Some(format!("{} ({})", r.destination(), r.client_addr))
            }
        }
    }
}

fn open_remote(host: &ClientHost, log: &dyn Fn(&str)) -> Result<Remote> {
    Remote::open(host, log).with_context(|| {
        format!(
            "starting the benchmark client on {} (--client-host)",
            host.destination
        )
    })
}
