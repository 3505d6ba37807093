# Union-trained vs OLTP-trained PGO+LTO build, cell by cell, from the matrix's results.jsonl: a
# supplementary comparison the run's own report does not make (its decision compares winner and
# runner-up only). Per round: transactions over time summed over the round's slices; paired log
# ratios; t interval (95 %, unadjusted) and the exact sign-flip p, Holm over the 16 cells.
import json, math, collections, itertools, sys
rows=[json.loads(l) for l in open(sys.argv[1])]
agg=collections.defaultdict(lambda:[0,0.0])
for r in rows:
    k=(r['workload'],r['threads'],r['contender'],r['round'])
    agg[k][0]+=r['result']['transactions']; agg[k][1]+=r['result']['total_time_s']
cells=sorted({(r['workload'],r['threads']) for r in rows})
A,B=sys.argv[2],sys.argv[3]
T={11:2.201,10:2.228,9:2.262}
res=[]
for w,t in cells:
    d=[]
    for rd in range(1,13):
        a=agg.get((w,t,A,rd)); b=agg.get((w,t,B,rd))
        if a and b and a[1] and b[1]: d.append(math.log((a[0]/a[1])/(b[0]/b[1])))
    n=len(d); m=sum(d)/n; sd=math.sqrt(sum((x-m)**2 for x in d)/(n-1)); h=T[n-1]*sd/math.sqrt(n)
    obs=abs(sum(d)); cnt=0; tot=0
    for s in itertools.product([1,-1],repeat=n):
        tot+=1; cnt+= abs(sum(x*y for x,y in zip(s,d)))>=obs-1e-12
    res.append((w,t,m,h,cnt/tot,n))
order=sorted(range(len(res)),key=lambda i:res[i][4]); k=len(res); sig=set()
for j,i in enumerate(order):
    if res[i][4] <= 0.05/(k-j): sig.add(i)
    else: break
print(f"{A} vs {B}")
for i,(w,t,m,h,p,n) in enumerate(res):
    print(f"{w:18s} {t:3d}  {100*(math.exp(m)-1):+6.1f} % [{100*(math.exp(m-h)-1):+6.1f}, {100*(math.exp(m+h)-1):+6.1f}]  n={n} p={p:.4f} {'significant (Holm)' if i in sig else ''}")
