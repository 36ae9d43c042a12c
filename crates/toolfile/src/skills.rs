//! `skills:`: the directory of skills a server serves (the Skills extension), one for all
//! the files, relative to the directory of the file that names it.

use crate::document::Document;
use crate::error::{FileProblem, Problem};
use std::path::PathBuf;

/// The one `skills:` of the files, resolved against its file's directory. A second one,
/// or one that is not a non-empty string, is a problem.
pub fn read(docs: &[Document], problems: &mut Vec<FileProblem>) -> Option<PathBuf> {
    let mut found: Option<(PathBuf, &Document)> = None;
    for doc in docs {
        let Some(raw) = &doc.skills else { continue };
        let Some(dir) = raw.as_str().filter(|s| !s.is_empty()) else {
            problems.push(doc.root_problem(Problem::new(
                ["skills"],
                "`skills` must be the path of a directory of skills",
            )));
            continue;
        };
        if let Some((_, first)) = &found {
            problems.push(doc.root_problem(Problem::new(
                ["skills"],
                format!(
                    "`skills:` is set in {} already; it belongs in one file",
                    first.file.display()
                ),
            )));
            continue;
        }
        let base = doc.file.parent().map(PathBuf::from).unwrap_or_default();
        found = Some((base.join(dir), doc));
    }
    found.map(|(p, _)| p)
}

#[cfg(test)]
mod tests {
    use super::read;
    use crate::document::{Document, Format};
    use std::path::{Path, PathBuf};

    fn doc(name: &str, text: &str) -> Document {
        Document::parse(Path::new(name), Format::Yaml, text.into()).unwrap()
    }

    #[test]
    fn relative_to_the_file_and_once() {
        let mut problems = Vec::new();
        let docs = [doc("conf/a.yaml", "skills: my-skills\n")];
        assert_eq!(
            read(&docs, &mut problems),
            Some(PathBuf::from("conf/my-skills"))
        );
        assert!(problems.is_empty());
        let docs = [
            doc("a.yaml", "skills: s\n"),
            doc("b.yaml", "skills: t\n"),
            doc("c.yaml", "skills: [x]\n"),
        ];
        assert_eq!(read(&docs, &mut problems), Some(PathBuf::from("s")));
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
