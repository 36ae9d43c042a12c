use super::{SkillsError, load};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

const MD: &str =
    "---\nname: pdf\ndescription: Work with PDFs\nmetadata:\n  author: me\n---\nBody\n";

#[test]
fn reads_skills_at_any_depth_with_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pdf/SKILL.md", MD);
    write(root, "pdf/references/FORMS.md", "forms");
    write(root, "pdf/.hidden", "no");
    write(
        root,
        "acme/hello/SKILL.md",
        "---\nname: hello\ndescription: Hi\n---\n",
    );
    let set = load(root).unwrap();
    let uris: Vec<&str> = set.entries().iter().map(|e| e.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["skill://acme/hello/SKILL.md", "skill://pdf/SKILL.md"]
    );
    let pdf = set.get("skill://pdf/SKILL.md").unwrap();
    assert_eq!(pdf.frontmatter["metadata"]["author"], "me");
    assert_eq!(pdf.resources.files().len(), 2);
    assert!(set.read("skill://pdf/.hidden").is_none());
}

#[test]
fn a_link_out_of_the_root_is_not_served_and_one_inside_is() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "secret").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pdf/SKILL.md", MD);
    write(root, "pdf/notes.md", "notes");
    symlink(outside.path().join("secret"), root.join("pdf/secret")).unwrap();
    symlink("../../etc/passwd", root.join("pdf/passwd")).unwrap();
    symlink("notes.md", root.join("pdf/again.md")).unwrap();
    symlink(outside.path(), root.join("pdf/outdir")).unwrap();
    let set = load(root).unwrap();
    let files: Vec<&str> = set
        .get("skill://pdf/SKILL.md")
        .unwrap()
        .resources
        .files()
        .iter()
        .map(|f| f.uri.as_str())
        .collect();
    assert_eq!(
        files,
        [
            "skill://pdf/SKILL.md",
            "skill://pdf/again.md",
            "skill://pdf/notes.md"
        ]
    );
}

#[test]
fn refuses_bad_skills() {
    let cases = [
        ("pdf/SKILL.md", "no frontmatter\n"),
        ("pdf/SKILL.md", "---\n- a list\n---\n"),
        ("pdf/SKILL.md", "---\nname: other\ndescription: d\n---\n"),
    ];
    for (rel, text) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), rel, text);
        let e = load(dir.path()).unwrap_err();
        assert!(
            matches!(
                e,
                SkillsError::Frontmatter { .. } | SkillsError::Rule { .. }
            ),
            "{text}: {e}"
        );
    }
    assert!(matches!(
        load(Path::new("/nonexistent/skills")),
        Err(SkillsError::Io { .. })
    ));
}

#[test]
fn an_oversized_skill_is_refused_while_read() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "pdf/SKILL.md", MD);
    let big = fs::File::create(dir.path().join("pdf/big.bin")).unwrap();
    big.set_len(17 * 1024 * 1024).unwrap();
    let e = load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("more than 16777216 bytes"), "{e}");
}
