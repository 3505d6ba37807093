//! Source: the recipe's (a Debian source package, a URL) or the user's (a directory, a tarball, a
//! URL), extracted once into WORK/sources/ and hashed.

use anyhow::Result;

use crate::pipeline::plan::RunRequest;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::recipe::Recipe;
use crate::source::{self, Source};

pub struct SourceStage<'a> {
    pub recipe: &'a Recipe,
    pub user: Option<&'a str>,
    pub sha256: Option<&'a str>,
}

impl Stage for SourceStage<'_> {
    type Output = Source;

    fn name(&self) -> StageId {
        StageId::Source
    }

    fn key(&self) -> Result<String> {
        inputs_hash(&(&self.recipe.source, &self.user, &self.sha256))
    }

    fn still_valid(&self, s: &Source) -> bool {
        // A directory is hashed again every time (cheap): an edit there must give a new key to
        // every build.
        let is_dir = self.user.is_some_and(|u| std::path::Path::new(u).is_dir());
        !is_dir && s.dir.join("CMakeLists.txt").is_file()
    }

    fn run(&self, cx: &Ctx) -> Result<Made<Source>> {
        Ok(Made::New(source::fetch(
            self.recipe,
            self.user,
            self.sha256,
            cx.work,
        )?))
    }
}

impl<'a> SourceStage<'a> {
    /// The source stage of `pgoforge run`.
    pub fn of_run(req: &'a RunRequest) -> SourceStage<'a> {
        SourceStage {
            recipe: &req.recipe,
            user: req.source.as_deref(),
            sha256: req.sha256.as_deref(),
        }
    }
}
