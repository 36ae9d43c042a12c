use super::{Skill, SkillSet};
use crate::error::SkillError;
use serde_json::json;
use toolwright_protocol::skills::digest;

fn skill(path: &str, fm: serde_json::Value, files: &[(&str, &[u8])]) -> Skill {
    Skill {
        path: path.into(),
        frontmatter: fm.as_object().unwrap().clone(),
        files: files
            .iter()
            .map(|(p, b)| ((*p).into(), b.to_vec()))
            .collect(),
    }
}

fn pdf() -> Skill {
    skill(
        "pdf",
        json!({"name": "pdf", "description": "PDFs"}),
        &[
            (
                "SKILL.md",
                b"---\nname: pdf\ndescription: PDFs\n---\nBody\n",
            ),
            ("references/FORMS.md", b"forms"),
            ("logo.bin", &[0xff, 0x00]),
        ],
    )
}

#[test]
fn entries_carry_every_file_with_digest_and_size() {
    let set = SkillSet::new(vec![pdf()]).unwrap();
    let e = set.get("skill://pdf/SKILL.md").unwrap();
    let files = e.resources.files();
    assert_eq!(files.len(), 3);
    let forms = e.file("skill://pdf/references/FORMS.md").unwrap();
    assert_eq!(
        (forms.digest.as_str(), forms.size),
        (digest(b"forms").as_str(), 5)
    );
    assert_eq!(set.listed()[0].name, "pdf");
    assert_eq!(set.listed()[0].description.as_deref(), Some("PDFs"));
}

#[test]
fn reads_text_and_binary() {
    let set = SkillSet::new(vec![pdf()]).unwrap();
    let md = set.read("skill://pdf/SKILL.md").unwrap();
    assert_eq!(md.mime_type.as_deref(), Some("text/markdown"));
    assert!(md.text.unwrap().starts_with("---"));
    let bin = set.read("skill://pdf/logo.bin").unwrap();
    assert_eq!(bin.blob.as_deref(), Some("/wA="));
    assert!(set.read("skill://pdf/../etc/passwd").is_none());
}

#[test]
fn directories_list_direct_children() {
    let set = SkillSet::new(vec![pdf()]).unwrap();
    let root = set.directory("skill://pdf/").unwrap();
    let uris: Vec<_> = root
        .iter()
        .map(|r| (r.uri.as_str(), r.mime_type.as_deref()))
        .collect();
    assert_eq!(
        uris,
        [
            ("skill://pdf/SKILL.md", Some("text/markdown")),
            ("skill://pdf/logo.bin", Some("application/octet-stream")),
            ("skill://pdf/references", Some("inode/directory")),
        ]
    );
    assert_eq!(set.directory("skill://pdf/references").unwrap().len(), 1);
    assert!(set.directory("skill://pdf/SKILL.md").is_none());
}

#[test]
fn refuses_what_the_extension_forbids() {
    let md: &[(&str, &[u8])] = &[("SKILL.md", b"x")];
    let cases = [
        skill("pdf", json!({"name": "other", "description": "d"}), md),
        skill("Pdf", json!({"name": "Pdf", "description": "d"}), md),
        skill("pdf", json!({"name": "pdf"}), md),
        skill(
            "pdf",
            json!({"name": "pdf", "description": "d"}),
            &[("README.md", b"x")],
        ),
        skill(
            "pdf",
            json!({"name": "pdf", "description": "d"}),
            &[("SKILL.md", b"x"), ("../x", b"")],
        ),
        skill("a b/pdf", json!({"name": "pdf", "description": "d"}), md),
        skill(
            "pdf",
            json!({"name": "pdf", "description": "d", "metadata": {"io.modelcontextprotocol/x": 1}}),
            md,
        ),
    ];
    for s in cases {
        let path = s.path.clone();
        assert!(
            matches!(SkillSet::new(vec![s]), Err(SkillError::Invalid { .. })),
            "{path}"
        );
    }
    let nested = vec![
        pdf(),
        skill(
            "pdf/inner",
            json!({"name": "inner", "description": "d"}),
            md,
        ),
    ];
    assert!(matches!(
        SkillSet::new(nested),
        Err(SkillError::Nested { .. })
    ));
}

#[test]
fn limits_files_per_skill() {
    let mut s = pdf();
    s.files
        .extend((0..600).map(|i| (format!("f{i}.txt"), vec![])));
    assert!(SkillSet::new(vec![s]).is_err());
}
