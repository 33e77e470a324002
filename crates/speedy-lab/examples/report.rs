//! Renders the report of a results file:
//! `cargo run -p speedy-lab --example report -- results.jsonl report.html`.

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (Some(results), Some(out)) = (args.next(), args.next()) else {
        return Err("usage: report RESULTS.jsonl OUT.html".into());
    };
    let stats = speedy_lab::report::write_report(results.as_ref(), out.as_ref())?;
    print!("{}", speedy_lab::report::summary_text(&stats));
    println!("{out}");
    Ok(())
}
