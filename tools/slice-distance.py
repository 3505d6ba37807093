#!/usr/bin/env python3
"""Does a pair's scatter grow with its distance in a sliced run's rotation?

In the sliced design a round's servers keep one cyclic order and the first position rotates slice
by slice, so two servers d places apart in that order (d = 1 … n/2) run about d slices apart on
average. If the host's noise fades within seconds, pairs further apart scatter more. For every
pair of contenders, each round's log-ratio less the pair's mean over the run; the residuals'
root-mean-square pooled by d (the round's order decides a pair's d, so one pair has several).

usage: tools/slice-distance.py RUN_DIR/results.jsonl [...]
"""
import collections, json, math, statistics, sys
for path in sys.argv[1:]:
    rows=[json.loads(l) for l in open(path)]
    # order of contenders per (round, workload): slice 0 positions
    order=collections.defaultdict(dict)
    tps=collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        if r.get('slice') is None: continue
        key=(r['round'],r['workload'])
        if r['slice']==0: order[key][r['position']]=r['contender']
        res=r['result']; tps[key][r['contender']].append(res['transactions']/res['total_time_s'])
    names=sorted({c for k in order for c in order[k].values()})
    n=len(names)
    # per (workload, pair): list of (d, logratio)
    by=collections.defaultdict(list)
    for key,o in order.items():
        pos={c:p for p,c in o.items()}
        for i,a in enumerate(names):
            for b in names[i+1:]:
                if a not in pos or b not in pos: continue
                g=(pos[b]-pos[a])%n; d=min(g,n-g)
                lr=math.log(statistics.fmean(tps[key][b])/statistics.fmean(tps[key][a]))
                by[(key[1],a,b)].append((d,lr))
    # residual: log ratio minus pair mean (per workload,pair); pool variance by d
    res=collections.defaultdict(lambda: collections.defaultdict(list))
    for (w,a,b),v in by.items():
        m=statistics.fmean(x for _,x in v)
        for d,x in v: res[w][d].append((x-m))
    print(path, "servers in the rotation:", n)
    for w in sorted(res):
        print('  ',w, '  '.join(f"d={d}: sd {100*math.sqrt(sum(x*x for x in xs)/len(xs)):.2f}% (n {len(xs)})" for d,xs in sorted(res[w].items())))
