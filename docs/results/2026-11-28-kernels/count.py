import sys,re,statistics
def tables(path):
    out={}; cur=None
    for l in open(path):
        if l.startswith('### (a)'):
            cur=l.strip(); out[cur]=[]
        elif cur and l.startswith('| ') and not l.startswith('| op') :
            cells=[c.strip() for c in l.strip().strip('|').split('|')]
            if len(cells)>=10:
                try:
                    m=[float(x) for x in cells[8].split(',')]; o=[float(x) for x in cells[9].split(',')]
                    out[cur].append((cells[0],cells[1],m,o))
                except ValueError: pass
        elif cur and l.startswith('#'): cur=None
    return out
for path in sys.argv[1:]:
    print(path)
    for k,rows in tables(path).items():
        n=len(rows)
        allm=sum(max(m)<=1.05 for _,_,m,_ in rows); allo=sum(max(o)<=1.05 for _,_,_,o in rows)
        medm=sum(statistics.median(m)<=1.05 for _,_,m,_ in rows); medo=sum(statistics.median(o)<=1.05 for _,_,_,o in rows)
        print('  %-100s n=%d  all-repeats<=1.05: MPICH %d OMPI %d | median<=1.05: MPICH %d OMPI %d'%(k[:100],n,allm,allo,medm,medo))
