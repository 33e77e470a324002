//! Which shard of an experiment's loads this process runs: `--shard I/N`, or what a
//! batch scheduler says in the environment (Slurm job arrays, Kubernetes Indexed Jobs).

/// Parses `I/N` (0-based I, 0 ≤ I < N).
pub fn parse(s: &str) -> Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("--shard {s}: expected I/N"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("--shard {s}: I is not a number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("--shard {s}: N is not a number"))?;
    if n == 0 || i >= n {
        return Err(format!("--shard {s}: need 0 <= I < N"));
    }
    Ok((i, n))
}

/// The shard a batch scheduler gives this task when `--shard` is not set: Slurm job
/// arrays (`SLURM_ARRAY_TASK_ID` counted from `SLURM_ARRAY_TASK_MIN`, of
/// `SLURM_ARRAY_TASK_COUNT`) or Kubernetes Indexed Jobs (`JOB_COMPLETION_INDEX`, 0-based,
/// of `SPEEDY_SHARDS`, which the Job sets to its `completions`). Returns (index 0-based,
/// count, where it came from).
pub fn from_env(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<(usize, usize, String)>, String> {
    let num = |k: &str| -> Result<Option<usize>, String> {
        match var(k) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{k}={v:?}: not a number")),
        }
    };
    if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
        let (Some(count), min) = (num("SLURM_ARRAY_TASK_COUNT")?, num("SLURM_ARRAY_TASK_MIN")?)
        else {
            return Err("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not".into());
        };
        let min = min.unwrap_or(0);
        let i = id.checked_sub(min).filter(|i| *i < count).ok_or_else(|| {
            format!("SLURM_ARRAY_TASK_ID {id} is outside {min}..{min}+{count}; use a contiguous --array")
        })?;
        return Ok(Some((
            i,
            count,
            format!("SLURM_ARRAY_TASK_ID {id} − SLURM_ARRAY_TASK_MIN {min}, of SLURM_ARRAY_TASK_COUNT {count}"),
        )));
    }
    if let Some(i) = num("JOB_COMPLETION_INDEX")? {
        let Some(n) = num("SPEEDY_SHARDS")? else {
            return Err("JOB_COMPLETION_INDEX is set: give the shard count in SPEEDY_SHARDS (the Job's completions) or use --shard I/N".into());
        };
        if i >= n {
            return Err(format!(
                "JOB_COMPLETION_INDEX {i} is not below SPEEDY_SHARDS {n}"
            ));
        }
        return Ok(Some((
            i,
            n,
            format!("JOB_COMPLETION_INDEX {i} of SPEEDY_SHARDS {n}"),
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::from_env as shard_from_env;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn reads_the_shard_from_slurm_and_kubernetes() {
        assert_eq!(shard_from_env(env(&[])).unwrap(), None);
        let s = shard_from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((s.0, s.1), (4, 8), "Slurm ids count from the array's first");
        let k = shard_from_env(env(&[
            ("JOB_COMPLETION_INDEX", "2"),
            ("SPEEDY_SHARDS", "3"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((k.0, k.1), (2, 3));
        assert!(shard_from_env(env(&[("JOB_COMPLETION_INDEX", "2")]))
            .unwrap_err()
            .contains("SPEEDY_SHARDS"));
        assert!(shard_from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "9"),
            ("SLURM_ARRAY_TASK_COUNT", "4")
        ]))
        .unwrap_err()
        .contains("outside"));
    }
}
