//! `pgoforge recipes`: the embedded recipes.

use anyhow::Result;
use clap::Args;
use pgoforge::recipe::{Recipe, SourceSpec, DEFAULT};

#[derive(Args)]
pub struct RecipesArgs {
    /// Print the recipes as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(a: RecipesArgs) -> Result<i32> {
    let recipes: Vec<Recipe> = Recipe::embedded_names()
        .map(Recipe::embedded)
        .collect::<Result<_>>()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&recipes)?);
        return Ok(0);
    }
    for r in &recipes {
        let src = match &r.source {
            SourceSpec::Debian {
                package,
                version,
                suite,
                ..
            } => format!("Debian source {package} {version} ({suite})"),
            SourceSpec::User { .. } => "your tarball (--source)".into(),
            SourceSpec::Url { url, .. } => url.clone(),
        };
        let default = if r.name == DEFAULT { " (default)" } else { "" };
        let compiler = r.build.default_compiler.as_deref().unwrap_or("gcc");
        println!(
            "{:<14} {}{default}\n               source: {src}; builds {} with {compiler}",
            r.name,
            r.description,
            r.build.targets.join(", ")
        );
    }
    Ok(0)
}
