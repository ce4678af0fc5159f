//! `lockbench completions SHELL` and `lockbench man`: a shell completion script and a roff man page,
//! generated from the command line's own definition (handed in by the CLI layer), so they never
//! drift from `--help`.

use clap_complete::Shell;

/// The completion script of `command` for `shell`, as the shell sources it.
pub(crate) fn completions(mut command: clap::Command, shell: Shell) -> Vec<u8> {
    let name = command.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    script
}

/// The man page of `command` (section 1), in roff, opening with its `.TH` line.
pub(crate) fn man_page(command: clap::Command) -> Result<Vec<u8>, std::io::Error> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page)?;
    Ok(title_first(&page))
}

/// `page` with the lines before its `.TH` line (string definitions, which may stand anywhere before
/// their first use, and `.TH` uses none) moved after it, so the page opens with its title, and
/// ending in a newline.
fn title_first(page: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(title) = lines.iter().position(|l| l.starts_with(".TH ")) else {
        return page.to_vec();
    };
    let mut out = String::with_capacity(text.len() + 1);
    out.push_str(lines[title]);
    for line in lines[..title].iter().chain(&lines[title + 1..]) {
        out.push_str(line);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("demo")
            .about("A demo")
            .subcommand(clap::Command::new("compare").about("Compare"))
    }

    #[test]
    fn every_shell_gets_a_script_naming_the_subcommands() {
        for shell in [
            Shell::Bash,
            Shell::Zsh,
            Shell::Fish,
            Shell::Elvish,
            Shell::PowerShell,
        ] {
            let script = String::from_utf8(completions(command(), shell)).expect("UTF-8");
            assert!(
                script.contains("demo") && script.contains("compare"),
                "{shell}: {script}"
            );
        }
    }

    #[test]
    fn the_man_page_opens_with_its_title() {
        let page = String::from_utf8(man_page(command()).expect("rendered")).expect("UTF-8");
        assert!(page.starts_with(".TH demo 1"), "{page}");
        assert_eq!(page.matches(".TH ").count(), 1, "{page}");
        assert!(page.ends_with('\n'), "{page}");
        assert!(page.contains("compare"), "{page}");
    }
}
