import { expect } from 'chai';
import { AppError } from '../api/src/shared/http/errors.js';

/** The AppError a promise rejects with; fails the test if it resolves or rejects with anything else. */
export const rejection = (promise: Promise<unknown>): Promise<AppError> =>
  promise.then(
    () => expect.fail('resolved'),
    (error: unknown) => {
      expect(error).to.be.instanceOf(AppError);
      return error as AppError;
    },
  );
