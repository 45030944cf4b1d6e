#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef void (*fn)(const void*,void*,size_t);
fn ct_reduce_kernel(MPI_Op, MPI_Datatype);
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  size_t sizes[]={8192, 32768, 131072, 524288};
  fn f=ct_reduce_kernel(MPI_SUM,MPI_DOUBLE);
  for(int k=0;k<4;k++){ size_t n=sizes[k]/8;
    double *a=malloc(n*8),*b=malloc(n*8),*c=malloc(n*8); for(size_t i=0;i<n;i++){a[i]=1;b[i]=2;}
    int it=2000; double best[3]={1e9,1e9,1e9};
    for(int rep=0;rep<5;rep++){
    double t0=MPI_Wtime();
    for(int i=0;i<it;i++) MPI_Reduce_local(a,b,(int)n,MPI_DOUBLE,MPI_SUM);
    double t1=MPI_Wtime();
    for(int i=0;i<it;i++) f(a,b,n);
    double t2=MPI_Wtime();
    for(int i=0;i<it;i++) memcpy(c,a,n*8);
    double t3=MPI_Wtime();
    double v[3]={t1-t0,t2-t1,t3-t2}; for(int j=0;j<3;j++) if(v[j]<best[j]) best[j]=v[j]; }
    printf("%zu B: reduce_local %.2f us  ct %.2f us  memcpy %.2f us\n", n*8,best[0]/it*1e6,best[1]/it*1e6,best[2]/it*1e6);
  }
  MPI_Finalize();
}
