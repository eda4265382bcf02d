//! `askuser agents`: the agents the server runs (`ListAgents`), and the did-you-mean of an agent
//! id that names none of them.

use super::CliError;
use super::connect::{ClientArgs, Connection};
use super::print::Printer;

/// `askuser agents`.
#[derive(Clone, Debug, clap::Args)]
pub struct AgentsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn run(args: AgentsArgs) -> Result<(), CliError> {
    let mut connection = Connection::open(&args.client).await?;
    let mut agents = connection.list_agents().await?;
    agents.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
    let mut printer = Printer::new(args.client.json);
    if args.client.json {
        for agent in &agents {
            printer.json_line(agent)?;
        }
        return Ok(());
    }
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|agent| {
            vec![
                agent.agent_id.clone(),
                agent.name.clone(),
                agent.tools.join(","),
                one_line(&agent.instructions, 60),
            ]
        })
        .collect();
    printer.table(&["ID", "NAME", "TOOLS", "DESCRIPTION"], &rows)
}

/// The first line of `text`, cut at `width` characters.
pub fn one_line(text: &str, width: usize) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let line = line.trim();
    if line.chars().count() > width {
        let cut: String = line.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

/// The error for an agent id the server does not know: the known agents, and the closest one.
pub async fn unknown_agent(
    connection: &mut Connection,
    given: &str,
    original: CliError,
) -> CliError {
    let Ok(agents) = connection.list_agents().await else {
        return original;
    };
    let mut ids: Vec<String> = agents.into_iter().map(|agent| agent.agent_id).collect();
    ids.sort();
    CliError::Usage(unknown_agent_message(given, &ids))
}

fn unknown_agent_message(given: &str, ids: &[String]) -> String {
    let mut message = format!("no agent {given:?}");
    if let Some(closest) = did_you_mean(given, ids) {
        message.push_str(&format!(": did you mean {closest}?"));
    }
    if ids.is_empty() {
        message.push_str("; the server runs no agents");
    } else {
        message.push_str(&format!(
            ". The agents are: {} (`askuser agents` lists them)",
            ids.join(", ")
        ));
    }
    message
}

/// The known id closest to `given`, when it is close enough to be a typo.
pub fn did_you_mean<'a>(given: &str, known: &'a [String]) -> Option<&'a str> {
    let given = given.to_lowercase();
    known
        .iter()
        .map(|id| (edit_distance(&given, &id.to_lowercase()), id))
        .filter(|(distance, id)| *distance <= (id.chars().count() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, id)| id.as_str())
}

/// Levenshtein distance, counting an adjacent transposition as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_agent() {
        let known = vec![
            "deploy".to_owned(),
            "deployer".to_owned(),
            "name".to_owned(),
        ];
        assert_eq!(did_you_mean("deplyo", &known), Some("deploy"));
        assert_eq!(did_you_mean("nmae", &known), Some("name"));
        assert_eq!(did_you_mean("zzzzzzzz", &known), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
