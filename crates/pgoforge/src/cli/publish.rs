//! `pgoforge publish`: .debs (or package tarballs) into a signed apt repository, and the lines a
//! host adds to use it.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use pgoforge::repository::{self, KeyChoice, PublishRequest, KEY_FILE};

#[derive(Args)]
pub struct PublishArgs {
    /// .debs (`package --deb`, `package deb`) or package tarballs (their .deb is made first).
    #[arg(required = true, value_name = "PACKAGE")]
    packages: Vec<PathBuf>,
    /// The repository's directory (made if missing); serve it with any web server.
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// The suite hosts name in their sources.
    #[arg(long, default_value = "bookworm-pgoforge")]
    suite: String,
    /// Sign with this secret key of your GnuPG keyring (fingerprint or user id) [a key
    /// pgoforge makes once and keeps in --key-home].
    #[arg(long, value_name = "KEY", conflicts_with = "key_home")]
    key: Option<String>,
    /// Where pgoforge keeps the key it makes (never inside the repository)
    /// [$XDG_DATA_HOME/pgoforge/archive-key, else ~/.local/share/pgoforge/archive-key].
    #[arg(long, value_name = "DIR")]
    key_home: Option<PathBuf>,
    /// The URL hosts reach the repository at, for the sources line printed [file://DIR].
    #[arg(long)]
    url: Option<String>,
    /// Print what was published as JSON.
    #[arg(long)]
    json: bool,
}

pub(super) fn default_key_home() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("pgoforge/archive-key")
}

/// `--key` when given, else pgoforge's own key in `home` (`--key-home`, or the default).
pub(super) fn key_choice<'a>(key: &'a Option<String>, home: &'a std::path::Path) -> KeyChoice<'a> {
    match key {
        Some(k) => KeyChoice::Named(k),
        None => KeyChoice::Own(home),
    }
}

pub fn main(a: PublishArgs) -> Result<i32> {
    let home = a.key_home.clone().unwrap_or_else(default_key_home);
    let key = key_choice(&a.key, &home);
    let p = repository::publish(&PublishRequest {
        repo: &a.repo,
        inputs: &a.packages,
        suite: &a.suite,
        key,
        url: a.url.as_deref(),
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
        return Ok(0);
    }
    for e in &p.entries {
        println!(
            "{} {} ({}): {}\n  {}",
            e.package,
            e.version,
            e.architecture,
            e.outcome,
            e.file.display()
        );
    }
    println!(
        "signed {}/dists/{}/InRelease with {}{}",
        p.repo.display(),
        p.suite,
        p.key_fingerprint,
        match (&p.key_home, p.key_made) {
            (Some(h), true) => format!(
                " (a new key, kept in {}: back it up; hosts trust only this key)",
                h.display()
            ),
            (Some(h), false) => format!(" (kept in {})", h.display()),
            (None, _) => " (your keyring)".to_string(),
        }
    );
    println!(
        "\nOn each host, as root: fetch the key and check its fingerprint is {fp}\n\n    \
         install -d -m 0755 /etc/apt/keyrings\n    \
         curl -fsSLo /etc/apt/keyrings/{KEY_FILE} {url}/{KEY_FILE}\n    \
         gpg --show-keys /etc/apt/keyrings/{KEY_FILE}\n\n\
         then add /etc/apt/sources.list.d/pgoforge.sources:\n\n{deb822}\n\
         (one-line form: {line})\n\
         and: apt-get update && apt-get install mariadb-server-pgo",
        fp = p.key_fingerprint,
        url = p.url,
        deb822 = p
            .sources_deb822
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>(),
        line = p.sources_line,
    );
    Ok(0)
}
