//! A package README's steps, read as a user reads them: the indented lines are the commands.

/// The indented command lines of the README's step `n` (`N. ...` up to the next step).
pub fn readme_step(readme: &str, n: u32) -> String {
    let start = readme
        .find(&format!("\n{n}. "))
        .unwrap_or_else(|| panic!("README has a step {n}"));
    let rest = &readme[start + 1..];
    let end = rest
        .find(&format!("\n{}. ", n + 1))
        .or_else(|| rest.find("\n## "))
        .unwrap_or(rest.len());
    indented_lines(&rest[..end])
}

/// The indented (code-block) lines of a piece of Markdown, unindented: its commands.
pub fn indented_lines(text: &str) -> String {
    text.lines()
        .filter(|l| l.starts_with("    "))
        .map(|l| l.trim_start())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The commands as root runs them where there is no sudo: `sudo -u mysql` as `runuser`.
pub fn as_root(cmds: &str) -> String {
    cmds.replace("sudo -u mysql ", "runuser -u mysql -- ")
        .replace("sudo ", "")
}
