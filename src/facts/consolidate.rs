//! Consolidation of facts: the conflict pass from scratch (keys recomputed under the current
//! lexicons, supersessions decided by the current rules), then salience decay.

use super::types::ConsolidateReport;
use super::upgrade::resettle;
use crate::engine::{Engine, logical_now, resolve};
use crate::error::Result;
use crate::model::decision::DecisionKind;
use crate::model::scope::Scope;
use crate::store::write;

/// The conflict pass over every fact of `scope` from scratch, then salience decay if
/// [`Config::decay`](crate::config::Config::decay) is set; every change logged at the user's logical now.
/// (Condensing, the last step of [`Memory::consolidate`](crate::Memory::consolidate), is the
/// write path's.)
pub(crate) fn consolidate(engine: &Engine, scope: Scope<'_>) -> Result<ConsolidateReport> {
    scope.check()?;
    let mut report = ConsolidateReport::default();
    {
        let mut store = engine.lock_store();
        let Some((view, _)) = resolve(&store, scope)? else {
            return Ok(report);
        };
        let user = view.user;
        let now = store.user_now(user)?;
        let at = logical_now(&store, user)?;
        let tx = store.begin_for(&[scope.user])?;
        let agents = match scope.agent {
            Some(a) => vec![Some(a.to_owned())],
            None => write::all_fact_agents(&tx, user)?,
        };
        for agent in &agents {
            let (superseded, restored, rekeyed) = resettle(&tx, user, agent.as_deref(), &at)?;
            report.superseded += superseded;
            report.restored += restored;
            report.rekeyed += rekeyed;
            let kept = write::active_facts(&tx, user, agent.as_deref())?;
            if let (Some(decay), Some((_, now_unix))) = (engine.config.decay, &now) {
                for fact in &kept {
                    let days = (now_unix - fact.ts_unix) as f64 / 86_400.0;
                    let target = decay.apply(fact.row.initial_salience, days);
                    if target < fact.row.salience {
                        write::set_salience(&tx, fact.row.id, target)?;
                        let detail = serde_json::json!({ "from": fact.row.salience, "to": target, "days": days.floor() });
                        write::log(
                            &tx,
                            user,
                            agent.as_deref(),
                            &at,
                            DecisionKind::FactDecayed,
                            &fact.row.key,
                            None,
                            &detail.to_string(),
                        )?;
                        report.decayed += 1;
                    }
                }
            }
        }
        if report.superseded + report.restored + report.rekeyed + report.decayed > 0 {
            write::touch_user(&tx, user, None)?;
        }
        tx.commit()?;
        drop(store);
        engine.views.drop_user(user);
    }
    Ok(report)
}
